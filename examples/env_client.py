"""A minimal external agent: plays one episode of a run through the environment API with ``requests``.

    python examples/env_client.py --url http://localhost:8000 --token eegab_…

The key (from ``manage.py create_env_token``) names the run. The client starts the run's next episode, calls ``get_recording_info`` and ``compute_band_power`` on the
episode's record, submits a fixed final answer of the task's shape, and prints the score. A real
agent would send the prompts and observations to its model and post the actions the model chooses.
"""
import argparse
import json
import sys

import requests

# A well-formed answer per task, to show the shape each final answer takes.
PLACEHOLDER_ANSWERS = {
    "T1": {"answer": "A"},
    "T2": {"classification": "clean", "findings": []},
    "T3": {"classification": "normal", "findings": []},
    "T4": {"classification": "HC", "findings": []},
    "T5": {"seizure_events": []},
}


def placeholder_answer(task: str, record_id: str, n_epochs: int | None) -> dict:
    if task == "T6":
        n = n_epochs or 1
        return {
            "record_id": record_id,
            "hypnogram_rle": [{"start_epoch": 0, "end_epoch": n - 1, "stage": "W"}],
            "architecture": {"REM_pct": 0.0, "N3_pct": 0.0, "sleep_efficiency": 0.0},
        }
    return {"record_id": record_id, **PLACEHOLDER_ANSWERS[task]}


def play_episode(url: str, token: str, *, session=None) -> dict:
    """Play one episode of the key's run to its end; return the environment's last answer (with the scores)."""
    http = session or requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    run = http.get(f"{url}/api/env/runs/", timeout=60)
    run.raise_for_status()
    run_id = run.json()["run"]
    started = http.post(f"{url}/api/env/runs/{run_id}/episodes/", json={}, timeout=60)
    started.raise_for_status()
    episode = started.json()
    print(f"episode {episode['episode']}: {episode['task']} on record {episode['record_id']}")
    actions_url = episode["actions_url"]

    def act(action: dict) -> dict:
        response = http.post(actions_url, json=action, timeout=300)
        response.raise_for_status()
        return response.json()

    tools = {spec["function"]["name"] for spec in episode["tools"]}
    n_epochs = None
    for tool_name in ("get_recording_info", "compute_band_power"):
        if tool_name not in tools:
            continue
        reply = act({"action": "tool_call", "tool_name": tool_name, "arguments": {"record_id": episode["record_id"]}})
        print(f"{tool_name}: {reply['status']}, {len(reply['observation'])} characters")
        if tool_name == "get_recording_info" and isinstance(reply["result"], dict):
            n_epochs = int(reply["result"]["duration_sec"] // 30)  # the night's 30-s epochs
    answer = placeholder_answer(episode["task"], episode["record_id"], n_epochs)
    reply = act({"action": "final_answer", **answer})
    while not reply["done"]:  # the answer was refused: the environment says why
        print(f"answer refused: {'; '.join(reply['errors'])}")
        reply = act({"action": "final_answer", **answer})
    print(f"done ({reply['ended_by']}): {json.dumps(reply['scores'])}")
    return reply


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="The platform's address, e.g. http://localhost:8000")
    parser.add_argument("--token", required=True, help="The run's environment key.")
    options = parser.parse_args(argv)
    play_episode(options.url.rstrip("/"), options.token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
