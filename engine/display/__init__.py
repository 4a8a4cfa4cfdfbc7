"""Plain-Python display conventions shared by the window and the exports: units,
round axis ticks, the probability colour scale.

Imports nothing."""
