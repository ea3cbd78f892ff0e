"""Tests of the worker process: heartbeat, remote control, poller, signals, launcher."""
