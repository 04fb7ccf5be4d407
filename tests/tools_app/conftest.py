"""Fixtures of the tool tests."""
import pytest


@pytest.fixture
def episode(monkeypatch):
    """Return ``use(recording)``: afterwards ``call_tool`` opens ``recording`` for any path."""
    import tools_app.recording

    def use(recording):
        monkeypatch.setattr(tools_app.recording, "open_recording", lambda path, metadata=None: recording)
        return recording

    return use
