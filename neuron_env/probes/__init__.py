"""I/O only: each probe returns facts (plain frozen data) and never raises for a bad host."""
