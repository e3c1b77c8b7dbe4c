"""The version matrix: typed model (model.py), loader/validator (loader.py), the bundled
catalogue (catalog.py), resolver, serializer and manifest importer. Import the module you
need: this package imports nothing itself (doctor loads only what it uses)."""
