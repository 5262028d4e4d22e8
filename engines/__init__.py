"""Machines, engines, configs, engine clients and the simulator."""
