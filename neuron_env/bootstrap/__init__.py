"""Rendering of the first-boot user-data script and the EC2 Image Builder component."""
