"""Static files (config/static.py): plotly.min.js alone found in the plotly package, each collected file compressed
once, and collected files served compressed by whitenoise as the demo serves them."""
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders

from config.static import CompressedStaticFiles, PlotlyJsFinder

JS = "// a chart renderer\n" + "function draw(figure) { return figure.data.map(trace => trace.type); }\n" * 200


def test_plotly_min_js_is_found_in_the_plotly_package_and_nothing_else_of_it():
    assert finders.find("plotly/plotly.min.js") == str(Path(settings.PLOTLY_JS_DIR) / "plotly.min.js")
    assert finders.find("plotly/widgetbundle.js") is None
    assert finders.find("plotly/plotly.min.js", find_all=True) == [str(Path(settings.PLOTLY_JS_DIR) / "plotly.min.js")]
    assert [path for path, storage in PlotlyJsFinder().list([])] == ["plotly.min.js"]
    assert PlotlyJsFinder().check() == []


def collected(storage: CompressedStaticFiles, paths: list[str]) -> set[str]:
    """What post_process compressed (the compressed copies it names) when collectstatic hands it ``paths``."""
    return {name for _, name, _ in storage.post_process({path: (storage, path) for path in paths})}


def test_a_collected_file_is_compressed_once_until_it_changes(tmp_path):
    storage = CompressedStaticFiles(location=tmp_path)
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "charts.js").write_text(JS)
    (tmp_path / "js" / "tables.js").write_text(JS)
    assert collected(storage, ["js/charts.js", "js/tables.js"]) == {
        "js/charts.js.gz", "js/charts.js.br", "js/tables.js.gz", "js/tables.js.br",
    }
    assert collected(storage, ["js/charts.js", "js/tables.js"]) == set()  # both as new as their copies
    later = os.stat(tmp_path / "js" / "charts.js").st_mtime + 10
    os.utime(tmp_path / "js" / "charts.js", (later, later))  # collectstatic copied a changed source
    assert collected(storage, ["js/charts.js", "js/tables.js"]) == {"js/charts.js.gz", "js/charts.js.br"}
    (tmp_path / "js" / "tables.js.br").unlink()
    assert collected(storage, ["js/charts.js", "js/tables.js"]) == {"js/tables.js.gz", "js/tables.js.br"}


@pytest.mark.parametrize(
    ("accepted", "encoding", "suffix"), [("gzip, deflate, br", "br", ".br"), ("gzip", "gzip", ".gz"), ("", None, "")]
)
def test_whitenoise_serves_a_collected_file_compressed_under_the_policy(
    client, settings, tmp_path, accepted, encoding, suffix
):
    settings.STATIC_ROOT = tmp_path
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "charts.js").write_text(JS)
    collected(CompressedStaticFiles(location=tmp_path), ["js/charts.js"])
    response = client.get("/static/js/charts.js", HTTP_ACCEPT_ENCODING=accepted)
    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and response.get("Content-Encoding") == encoding
    assert body == (tmp_path / "js" / f"charts.js{suffix}").read_bytes()
    assert len(body) < len(JS) / 10 if encoding else len(body) == len(JS)
    assert response["Content-Security-Policy"] == settings.CONTENT_SECURITY_POLICY
