"""Stand-in of the official package (tests/official_standin/README.md)."""
