"""Tool calls in processes of their own (``tools_app.processes``): the same answers, made elsewhere."""
import os
import signal

import pytest

from tests.tools_app.test_recording import write_edf
from tools_app import call_tool
from tools_app.processes import ToolProcesses, ToolProcessLost, shared_tool_processes

LABELS = ["EEG Fp1-F7", "EEG F7-T7", "EEG T7-P7", "EEG P7-O1"]
CALLS = [
    ("get_recording_info", {}),
    ("compute_band_power", {"channels": ["EEG F7-T7"], "tmin": 10, "tmax": 70}),
    ("compute_windowed_features", {"channels": ["EEG Fp1-F7"], "features": ["rms_uv", "alpha_relative"], "window_sec": 30}),
    ("compute_noise_metrics", {}),
    ("detect_transients", {"channels": ["EEG T7-P7"], "tmin": 0, "tmax": 60}),
    ("compute_band_power", {"channels": ["EEG Cz-Pz"]}),  # no such channel: an error the model reads
    ("compute_psd", {"channels": ["EEG Fp1-F7"], "fmax": "forty"}),  # a bad argument: another
]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return write_edf(tmp_path_factory.mktemp("edf") / "rec.edf", LABELS, [256] * 4, 120, seed=3)


@pytest.fixture(scope="module")
def processes():
    with ToolProcesses(2) as pool:
        yield pool


def test_a_call_in_a_tool_process_answers_exactly_as_in_this_process(recording, processes):
    for name, arguments in CALLS:
        here = call_tool(recording, name, {"record_id": "rec-1", **arguments}, record_id="rec-1")
        there = processes.call(recording, name, {"record_id": "rec-1", **arguments}, record_id="rec-1")
        assert there == here, name
    errors = [processes.call(recording, name, {"record_id": "rec-1", **arguments}, record_id="rec-1")
              for name, arguments in CALLS[-2:]]  # fmt: skip
    assert all("error" in result for result in errors)
    # A record id other than the episode's own is refused there as here.
    assert processes.call(recording, "get_recording_info", {"record_id": "rec-2"}, record_id="rec-1") == call_tool(
        recording, "get_recording_info", {"record_id": "rec-2"}, record_id="rec-1"
    )


def test_the_calls_are_made_in_as_many_other_processes_as_asked(processes):
    pids = processes.pids()
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_a_recording_keeps_to_the_process_it_was_first_given_to_and_recordings_are_shared_out(tmp_path, processes):
    paths = [write_edf(tmp_path / f"rec-{number}.edf", LABELS, [256] * 4, 20, seed=number) for number in range(4)]
    first = {}
    for path in paths * 3:
        processes.call(path, "compute_temporal_features", {"record_id": "r"}, record_id="r")
        first.setdefault(path, processes._assigned[str(path)])
        assert processes._assigned[str(path)] == first[path]
    assert sorted(first.values()) == [0, 0, 1, 1]


def test_a_platform_bug_in_a_tool_process_is_raised_where_the_call_was_made(recording, processes, monkeypatch):
    with pytest.raises(TypeError):  # call_tool's own signature check, made there
        processes.call(recording, "compute_temporal_features", {"record_id": "r"}, record_id="r", no_such_option=1)


def test_a_tool_process_that_ended_is_reported_as_lost_and_closing_ends_the_others(recording):
    pool = ToolProcesses(2)
    pids = pool.pids()
    assert "error" not in pool.call(recording, "compute_temporal_features", {"record_id": "r"}, record_id="r")
    os.kill(pids[0], signal.SIGKILL)  # the first recording went to the first process
    with pytest.raises(ToolProcessLost, match="ended during compute_temporal_features"):
        pool.call(recording, "compute_temporal_features", {"record_id": "r"}, record_id="r")
    # The header tools read no samples and are answered in the calling process, which is still there.
    assert pool.call(recording, "get_channel_list", {"record_id": "r"}, record_id="r")["n_channels"] == 4
    pool.close()
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_tool_processes_end_when_the_process_that_made_them_is_killed(recording):
    import time

    reader, writer = os.pipe()
    creator = os.fork()
    if creator == 0:  # a worker that makes tool processes and is then killed (out of memory, SIGKILL)
        try:
            os.close(reader)
            pool = ToolProcesses(2)
            pool.call(recording, "compute_temporal_features", {"record_id": "r"}, record_id="r")
            os.write(writer, (" ".join(map(str, pool.pids())) + "\n").encode())
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:  # one line: the tool processes hold the writing end too
        pids = [int(pid) for pid in pipe.readline().split()]
    os.kill(creator, signal.SIGKILL)
    os.waitpid(creator, 0)
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if _running(pid)]
    for pid in left:  # they hold pytest's output: left running, they would keep its reader waiting
        os.kill(pid, signal.SIGKILL)
    assert len(pids) == 2 and not left


def _running(pid: int) -> bool:
    """Whether process ``pid`` is there and not a zombie (orphans are reaped by init, not by us)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_process_keeps_its_shared_tool_processes_for_later_runs_and_replaces_them_when_one_ends(recording):
    shared = shared_tool_processes()
    assert shared_tool_processes() is shared and shared.alive()
    os.kill(shared.pids()[1], signal.SIGKILL)
    shared._children[1].process.join()
    replaced = shared_tool_processes()
    assert replaced is not shared and replaced.alive() and not shared.alive()
    assert "error" not in replaced.call(recording, "compute_temporal_features", {"record_id": "r"}, record_id="r")
    replaced.close()


def test_a_first_header_call_has_the_recording_process_ready_its_statistics_with_the_same_answers(tmp_path):
    from tests.tools_app.test_recording import pyedflib_edf
    from tools_app.recording import clear_recording_cache, open_recording, warm_statistics
    from tools_app.signal import stored
    from tools_app.signal.ranges import source_for
    from tools_app.signal.segments import ChannelSegments

    night = pyedflib_edf(tmp_path / "night.edf", ["A", "B", "Resp", "C"], [200, 200, 1, 200], 1200)
    windowed = ("compute_windowed_features", {"record_id": "r", "channels": ["A"], "features": ["rms_uv"], "window_sec": 60})
    previous = stored.stats_dir()
    stored.configure(tmp_path / "stats")
    clear_recording_cache()
    try:
        with ToolProcesses(1) as pool:  # forked with the statistics directory set
            pool.call(night, "get_recording_info", {"record_id": "r"}, record_id="r")  # answered here; warms there
            there = pool.call(night, *windowed, record_id="r")
        assert len(list((tmp_path / "stats").rglob("*.stats"))) == 1  # the process computed and kept them
        assert there == call_tool(night, *windowed, record_id="r")  # here, from the kept file

        clear_recording_cache()
        warm_statistics(night)
        segments = source_for(open_recording(night)).segments
        for pick in range(segments.n_channels):
            assert set(ChannelSegments.STORED) <= set(vars(segments.channel(pick)))  # every array mapped and checked
    finally:
        stored.configure(previous)
        clear_recording_cache()


def test_a_call_past_its_deadline_ends_its_process_and_answers_the_timeout_error(recording, monkeypatch):
    import time

    from tools_app import tool_specs
    from tools_app.registry import REGISTRY

    def stuck(*args, **kwargs):
        time.sleep(600)

    tool_specs()
    spec = REGISTRY["compute_temporal_features"]
    monkeypatch.setitem(REGISTRY, "compute_temporal_features", type(spec)(**{**spec.__dict__, "function": stuck}))
    with ToolProcesses(1) as pool:  # forked with the stuck tool
        pid = pool.pids()[0]
        within = pool.call(recording, "compute_band_power", {"record_id": "r"}, record_id="r", timeout=60)
        assert within == call_tool(recording, "compute_band_power", {"record_id": "r"}, record_id="r")
        stopped = pool.call(recording, "compute_temporal_features", {"record_id": "r" * 300}, timeout=0.3)
        assert not _running(pid) and not pool.alive()
    assert stopped == {
        "record_id": "r" * 100 + "…",
        "error": "Tool compute_temporal_features took longer than the 0.3 s a call may take here and was stopped; "
                 "nothing was returned. Rescope to fit, e.g.: use fewer channels or a shorter time range via "
                 "tmin/tmax. Then call again.",
        "error_code": "timeout",
        "deadline_sec": 0.3,
    }
