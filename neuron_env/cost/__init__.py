"""The cost of a measured workload: `maths` (pure: $ per 1,000 samples and per step, the
baseline ratio), `prices` (the price table in neuron_env/data/prices.toml, and which price a
run uses: --price-per-hour, the table, or the AWS Pricing API with --aws)."""
