"""Outside submissions: researchers upload the official runner's output for a run, which is checked, rescored and
published after staff review."""
