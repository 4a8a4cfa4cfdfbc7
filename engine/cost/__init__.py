"""What runs cost: the person's prices and watts (costs.py) and one run's
economics as every view words it (run_cost.py).

Imports nothing."""
