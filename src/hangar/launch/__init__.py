"""Launch targets (local here): build argv/env, start, wait for readiness, stop, clean."""
