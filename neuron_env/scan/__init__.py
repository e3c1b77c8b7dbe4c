"""scan: static rules (data, per release) and the analyzer; never imports the scanned code."""
