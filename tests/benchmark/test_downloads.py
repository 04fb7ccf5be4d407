"""Downloads against local HTTP servers: a stand-in for the Hugging Face Hub and for the publishers."""

import hashlib
import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark import downloads
from benchmark.downloads import DATASETS, DownloadError, RemoteFile, download_dataset, download_release, fetch_file

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "whhhy123/EEGAgentBenchmark"


class FakeServer:
    """An HTTP server of in-memory files, with Range support, a request log and injectable faults."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.log: list[dict] = []
        self.cut_once: set[str] = set()     # send half of the body, then drop the connection (once)
        self.missing: set[str] = set()      # answer 404
        self.failing: set[str] = set()      # answer GET with 500 (a Hub file whose transfer fails)
        self.ignore_range = False
        self.routes = []                    # (predicate(path), handler(request, path, query)) tried first
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.do_GET()

            def do_GET(self):
                url = urlparse(self.path)
                path = unquote(url.path)
                server.log.append({"method": self.command, "path": path, "range": self.headers.get("Range"),
                                   "authorization": self.headers.get("Authorization")})
                for matches, handle in server.routes:
                    if matches(path):
                        return handle(self, path, parse_qs(url.query))
                if path in server.missing or path not in server.files:
                    return server.send(self, 404, b"not found")
                server.send_file(self, path, server.files[path])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def send(self, handler, code, body, headers=()):
        handler.send_response(code)
        for key, value in headers:
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)

    def send_file(self, handler, path, body, headers=()):
        requested = handler.headers.get("Range")
        if handler.command == "GET" and path in self.cut_once:
            self.cut_once.discard(path)
            handler.send_response(200)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body[: len(body) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        if requested and not self.ignore_range:
            start = int(requested.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                return self.send(handler, 416, b"", [("Content-Range", f"bytes */{len(body)}")])
            return self.send(handler, 206, body[start:],
                             [*headers, ("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")])
        self.send(handler, 200, body, headers)

    def requests(self, method="GET", path_part=""):
        return [entry for entry in self.log if entry["method"] == method and path_part in entry["path"]]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(downloads, "RETRY_BACKOFF_SEC", 0.0)


# ── a stand-in for the Hugging Face Hub ─────────────────────────────────────────────────────

HUB_FILES = {
    "data/bonn/Z/Z001.txt": b"12\r\n-3\r\n" * 3000,
    "data/chbmit/chb01/chb01_03.edf": bytes(range(256)) * 400,
    "metadata/croissant.json": b'{"name": "EEGAgentBench"}',
    "README.md": b"# dataset card",
}


def hub(fake: FakeServer, files=HUB_FILES) -> FakeServer:
    """Serve the Hub API calls snapshot_download makes: revision info, the tree, and resolve URLs."""
    def revision(handler, path, query):
        body = {"id": REPO, "sha": COMMIT, "siblings": [{"rfilename": name} for name in files]}
        fake.send(handler, 200, json.dumps(body).encode(), [("Content-Type", "application/json")])

    def tree(handler, path, query):
        rows = [{"type": "file", "path": name, "size": len(body), "oid": hashlib.sha1(body).hexdigest()}
                for name, body in files.items()]
        fake.send(handler, 200, json.dumps(rows).encode(), [("Content-Type", "application/json")])

    def resolve(handler, path, query):
        name = path.split(f"/resolve/{COMMIT}/", 1)[-1].split("/resolve/main/", 1)[-1]
        if name not in files or name in fake.missing:
            return fake.send(handler, 404, b"{}", [("X-Error-Code", "EntryNotFound"), ("X-Repo-Commit", COMMIT)])
        headers = [("X-Repo-Commit", COMMIT), ("ETag", f'"{hashlib.sha1(files[name]).hexdigest()}"')]
        if handler.command == "GET" and name in fake.failing:
            return fake.send(handler, 500, b"upstream timeout", headers)
        fake.send_file(handler, name, files[name], headers)

    fake.routes += [
        (lambda p: p == f"/api/datasets/{REPO}/revision/main", revision),
        (lambda p: p.startswith(f"/api/datasets/{REPO}/tree/"), tree),
        (lambda p: p.startswith(f"/datasets/{REPO}/resolve/"), resolve),
    ]
    return fake


def write_manifest(root, files=HUB_FILES, **wrong_sizes):
    rows = [{"display_id": "T3", "scenario_id": f"s{i}", "data_path": name,
             "size_bytes": wrong_sizes.get(name.rsplit("/", 1)[1].replace(".", "_"), len(body))}
            for i, (name, body) in enumerate(files.items()) if name.startswith("data/")]
    path = root / "benchmark/manifests/files.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_release_download_fetches_data_and_metadata_and_checks_the_manifest(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_not_for_this_server")
    hub(server)
    write_manifest(tmp_path)
    result = download_release(to=tmp_path, endpoint=server.url)
    for name in ("data/bonn/Z/Z001.txt", "data/chbmit/chb01/chb01_03.edf", "metadata/croissant.json"):
        assert (tmp_path / name).read_bytes() == HUB_FILES[name]
    assert not (tmp_path / "README.md").exists()
    assert (result.files, result.fetched, result.manifest) == (3, 3, tmp_path / "benchmark/manifests/files.jsonl")
    assert not [entry for entry in server.log if entry["authorization"]]


def test_release_download_resumes_after_a_failed_run(server, tmp_path):
    hub(server)
    server.failing.add("data/chbmit/chb01/chb01_03.edf")
    with pytest.raises(DownloadError) as caught:
        download_release(to=tmp_path, endpoint=server.url)
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith("data/chbmit/chb01/chb01_03.edf: not fetched (")
    assert caught.value.problems[0].endswith("; run again to resume")
    assert (tmp_path / "data/bonn/Z/Z001.txt").read_bytes() == HUB_FILES["data/bonn/Z/Z001.txt"]
    assert not (tmp_path / "data/chbmit/chb01/chb01_03.edf").exists()
    server.failing.clear()
    server.log.clear()
    result = download_release(to=tmp_path, endpoint=server.url)
    assert result.fetched == 1
    fetched = [entry["path"] for entry in server.requests("GET", "/resolve/")]
    assert fetched == [f"/datasets/{REPO}/resolve/{COMMIT}/data/chbmit/chb01/chb01_03.edf"]
    assert (tmp_path / "data/chbmit/chb01/chb01_03.edf").read_bytes() == HUB_FILES["data/chbmit/chb01/chb01_03.edf"]


def test_release_download_reports_sizes_that_differ_from_the_manifest(server, tmp_path):
    hub(server)
    write_manifest(tmp_path, Z001_txt=5)
    with pytest.raises(DownloadError) as caught:
        download_release(to=tmp_path, endpoint=server.url)
    assert caught.value.problems == [f"data/bonn/Z/Z001.txt: {len(HUB_FILES['data/bonn/Z/Z001.txt'])} bytes, "
                                     "the manifest says 5"]


def test_release_download_command_uses_hf_endpoint(server, tmp_path, monkeypatch):
    hub(server)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    out = io.StringIO()
    call_command("download_release", "--to", str(tmp_path), stdout=out)
    assert out.getvalue() == f"3 file(s) in {tmp_path}, 3 fetched; sizes checked against the Hub (no release manifest found)\n"
    with pytest.raises(CommandError, match="manifest not found"):
        call_command("download_release", "--to", str(tmp_path), "--manifest", str(tmp_path / "none.jsonl"))


# ── publishers ──────────────────────────────────────────────────────────────────────────────

def physionet(fake: FakeServer, files: dict[str, bytes], prefix="/files/chbmit/1.0.0/") -> str:
    fake.files.update({prefix + name: body for name, body in files.items()})
    sums = "".join(f"{hashlib.sha256(body).hexdigest()} {name}\n" for name, body in files.items())
    fake.files[prefix + "SHA256SUMS.txt"] = sums.encode()
    return fake.url + prefix


CHBMIT = {
    "RECORDS": b"chb01/chb01_01.edf\nchb01/chb01_03.edf\n",
    "chb01/chb01_01.edf": b"\x01\x02" * 5000,
    "chb01/chb01_03.edf": b"\x03\x04" * 7000,
    "chb02/chb02-summary.txt": b"Data Sampling Rate: 256 Hz\n",
}


def test_physionet_dataset_is_listed_from_its_checksums_and_verified(server, tmp_path):
    base = physionet(server, CHBMIT)
    result = download_dataset("chbmit", to=tmp_path, base_url=base)
    for name, body in CHBMIT.items():
        assert (tmp_path / name).read_bytes() == body
    assert sorted(result.files) == sorted([*CHBMIT, "SHA256SUMS.txt"]) and result.fetched == 5
    assert not list(tmp_path.rglob("*.part"))
    server.log.clear()
    again = download_dataset("chbmit", to=tmp_path, base_url=base)
    assert again.fetched == 0 and [e["path"] for e in server.requests()] == ["/files/chbmit/1.0.0/SHA256SUMS.txt"]


def test_include_patterns_select_files(server, tmp_path):
    base = physionet(server, CHBMIT)
    result = download_dataset("chbmit", to=tmp_path, base_url=base, include=["chb01/*"])
    assert sorted(result.files) == ["chb01/chb01_01.edf", "chb01/chb01_03.edf"]
    assert not (tmp_path / "RECORDS").exists()


def test_interrupted_transfer_resumes_with_a_range_request(server, tmp_path):
    base = physionet(server, CHBMIT)
    server.cut_once.add("/files/chbmit/1.0.0/chb01/chb01_03.edf")
    download_dataset("chbmit", to=tmp_path, base_url=base, include=["chb01/chb01_03.edf"])
    assert (tmp_path / "chb01/chb01_03.edf").read_bytes() == CHBMIT["chb01/chb01_03.edf"]
    ranges = [e["range"] for e in server.requests("GET", "chb01_03")]
    assert ranges == [None, f"bytes={len(CHBMIT['chb01/chb01_03.edf']) // 2}-"]


def test_a_failed_run_keeps_the_partial_file_and_the_next_run_resumes(server, tmp_path):
    body = CHBMIT["chb01/chb01_03.edf"]
    server.files["/f.edf"] = body
    server.cut_once.add("/f.edf")
    remote = RemoteFile("f.edf", server.url + "/f.edf", sha256=hashlib.sha256(body).hexdigest())
    with pytest.raises(DownloadError, match="run again to resume"):
        fetch_file(remote, tmp_path / "f.edf", retries=0)
    assert (tmp_path / "f.edf.part").stat().st_size == len(body) // 2 and not (tmp_path / "f.edf").exists()
    assert fetch_file(remote, tmp_path / "f.edf", retries=0) is True
    assert (tmp_path / "f.edf").read_bytes() == body and not (tmp_path / "f.edf.part").exists()
    assert server.requests("GET", "/f.edf")[-1]["range"] == f"bytes={len(body) // 2}-"
    assert fetch_file(remote, tmp_path / "f.edf") is False


def test_a_server_that_ignores_range_restarts_the_file(server, tmp_path):
    body = b"abcdef" * 1000
    server.files["/g.bin"] = body
    server.ignore_range = True
    (tmp_path / "g.bin.part").write_bytes(body[:100])
    assert fetch_file(RemoteFile("g.bin", server.url + "/g.bin", size=len(body)), tmp_path / "g.bin")
    assert (tmp_path / "g.bin").read_bytes() == body


def test_a_checksum_mismatch_discards_the_file(server, tmp_path):
    server.files["/h.bin"] = b"tampered"
    remote = RemoteFile("h.bin", server.url + "/h.bin", sha256=hashlib.sha256(b"original").hexdigest())
    with pytest.raises(DownloadError, match="sha256 differs"):
        fetch_file(remote, tmp_path / "h.bin")
    assert not list(tmp_path.iterdir())


def test_a_complete_part_file_is_finished_without_refetching(server, tmp_path):
    body = b"x" * 500
    server.files["/k.bin"] = body
    (tmp_path / "k.bin.part").write_bytes(body)
    assert fetch_file(RemoteFile("k.bin", server.url + "/k.bin", size=500), tmp_path / "k.bin")
    assert (tmp_path / "k.bin").read_bytes() == body
    assert server.requests("GET", "/k.bin")[0]["range"] == "bytes=500-"


def test_openneuro_dataset_is_listed_page_by_page_from_s3(server, tmp_path):
    objects = {"ds004504/participants.tsv": b"participant_id\tGroup\n",
               "ds004504/sub-001/eeg/sub-001_task-eyesclosed_eeg.set": b"\x00" * 3000,
               "ds004504/sub-001/eeg/": b""}
    server.files.update({f"/openneuro.org/{key}": body for key, body in objects.items()})
    server.files["/openneuro.org/ds004504/participants.tsv"] = b"short"  # listed size differs

    def listing(handler, path, query):
        keys = sorted(objects)
        page = keys[:2] if "continuation-token" not in query else keys[2:]
        contents = "".join(f"<Contents><Key>{key}</Key><Size>{len(objects[key])}</Size></Contents>" for key in page)
        more = "<IsTruncated>true</IsTruncated><NextContinuationToken>t2</NextContinuationToken>" \
            if "continuation-token" not in query else "<IsTruncated>false</IsTruncated>"
        body = f'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{contents}{more}</ListBucketResult>'
        assert query["prefix"] == ["ds004504/"] and query["list-type"] == ["2"]
        server.send(handler, 200, body.encode(), [("Content-Type", "application/xml")])

    server.routes.append((lambda p: p == "/openneuro.org", listing))
    with pytest.raises(DownloadError) as caught:
        download_dataset("ds004504", to=tmp_path, base_url=server.url + "/openneuro.org")
    assert caught.value.problems == ["participants.tsv: 5 bytes, expected 21"]
    assert (tmp_path / "sub-001/eeg/sub-001_task-eyesclosed_eeg.set").stat().st_size == 3000


def test_bonn_archives_are_unpacked_into_their_set_folders(server, tmp_path):
    for letter in "ZONFS":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(f"{letter}/{letter}001.txt", "1\r\n2\r\n")
            archive.writestr(f"__MACOSX/{letter}/._{letter}001.txt", "fork")
        server.files[f"/bonn/{letter}.zip"] = buffer.getvalue()
    result = download_dataset("bonn", to=tmp_path, base_url=server.url + "/bonn/")
    assert result.extracted == 5
    assert (tmp_path / "S/S001.txt").read_bytes() == b"1\r\n2\r\n"
    assert sorted(p.name for p in (tmp_path / "Z").iterdir()) == ["Z001.txt"]


def test_every_dataset_of_the_table_has_a_publisher_url():
    assert set(DATASETS) == {"chbmit", "sleep-edfx", "ds004504", "bonn", "eegdenoisenet", "medmcqa"}
    assert all(dataset.base_url.startswith(("https://", "http://")) for dataset in DATASETS.values())
    files = DATASETS["eegdenoisenet"].list_files("https://mirror.example/", 1.0)
    assert [f.url for f in files] == [f"https://mirror.example/{k}_all_epochs.npy" for k in ("EEG", "EOG", "EMG")]


def test_download_dataset_command(server, tmp_path):
    base = physionet(server, {"RECORDS": b"SC4001E0-PSG.edf\n"}, prefix="/files/sleep-edfx/1.0.0/")
    out = io.StringIO()
    call_command("download_dataset", "sleep-edfx", "--to", str(tmp_path), "--base-url", base, stdout=out)
    assert out.getvalue() == f"2 file(s) in {tmp_path}, 2 fetched\n"
    server.missing.add("/files/sleep-edfx/1.0.0/RECORDS")
    (tmp_path / "RECORDS").unlink()
    with pytest.raises(CommandError, match="RECORDS: HTTP 404"):
        call_command("download_dataset", "sleep-edfx", "--to", str(tmp_path), "--base-url", base)
