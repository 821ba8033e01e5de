// Nothing to check.
