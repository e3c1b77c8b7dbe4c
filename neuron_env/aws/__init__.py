"""Every boto3 call (imported lazily), EC2 facts, and publishing to tags and SSM."""
