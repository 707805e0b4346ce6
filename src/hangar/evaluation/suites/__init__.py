"""One module per functional suite; each exposes ``async def run(ctx) -> SuiteResult``."""
