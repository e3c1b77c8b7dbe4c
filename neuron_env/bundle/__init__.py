"""The support bundle: what a GitHub issue or an AWS support case needs, in one archive."""
