"""Search across runs: every ended episode a visitor may see, filtered and sorted (/episodes/, /api/episodes/)."""
