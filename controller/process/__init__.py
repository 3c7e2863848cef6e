"""The operator process: command line, wiring, leader election, health endpoints and logging."""
