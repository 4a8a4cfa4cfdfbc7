"""The guided tour (Help ▸ Tour…): the product's curriculum as live lessons on the
loaded model. The lessons (app/tour/lessons.py) are Qt-free; the panel drives them
through a TourHost (app/tour/host.py) that the shell implements."""
