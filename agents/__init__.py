"""Pipeline stages (plain async functions over typed records) and the model runner."""
