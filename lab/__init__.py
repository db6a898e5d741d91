"""Orchestration: settings, database, dataset, the implementation registry,
and process control. `lab.stack.running_lab` brings all of it up and down."""
