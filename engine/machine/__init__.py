"""This machine: what its CPU can do (hardware.py), a run against it
(hardware_timeline.py), and a run's energy (energy.py, power_table.py).

Imports nothing."""
