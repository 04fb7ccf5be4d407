"""Static files: plotly.js found in the plotly package, and collected files compressed once each.

``manage.py collectstatic`` gathers the site's files into ``STATIC_ROOT`` and writes a gzip and a
brotli copy beside each, which whitenoise serves to a browser that accepts them (plotly.min.js:
4.8 MB, 1.5 MB gzipped, 1.1 MB in brotli). The demo collects at every start, so
``CompressedStaticFiles`` compresses only the files collectstatic copied anew: brotli takes 14 s
over plotly.min.js, which changes only with the plotly package.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from whitenoise.compress import brotli_installed
from whitenoise.storage import CompressedStaticFilesStorage

PLOTLY_JS = "plotly.min.js"
PLOTLY_PREFIX = "plotly"


class PlotlyJsFinder(BaseFinder):
    """Finds ``plotly/plotly.min.js`` in the plotly package, so the charts work offline and match the package.

    Only that file: the package's data folder also holds a 5-MB widget bundle, datasets and
    templates that no page loads. ``settings.PLOTLY_JS_DIR`` is the folder.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=settings.PLOTLY_JS_DIR)
        self.storage.prefix = PLOTLY_PREFIX  # collectstatic and whitenoise place it under this folder

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path != f"{PLOTLY_PREFIX}/{PLOTLY_JS}":
            return []  # as Django's finders say "not found", whether or not find_all
        found = self.storage.path(PLOTLY_JS)
        return [found] if find_all else found

    def list(self, ignore_patterns):
        yield PLOTLY_JS, self.storage


class CompressedStaticFiles(CompressedStaticFilesStorage):
    """Whitenoise's compressing storage, compressing only the files whose compressed copies are out of date.

    Whitenoise gives a compressed copy its file's modification time, and collectstatic leaves a
    file alone when its source has not changed since.
    """

    def post_process(self, paths, dry_run=False, **options):
        stale = {path: found for path, found in paths.items() if not self.compressed_up_to_date(path)}
        yield from super().post_process(stale, dry_run=dry_run, **options)

    def compressed_up_to_date(self, path: str) -> bool:
        """Whether ``path`` has its gzip copy, and brotli one where brotli is installed, each as new as itself.

        A file that compresses badly has none, and is tried again.
        """
        source = Path(self.path(path))
        modified = os.stat(source).st_mtime
        copies = [source.with_name(source.name + suffix) for suffix in (".gz", ".br")[: 1 + brotli_installed]]
        return all(copy.exists() and os.stat(copy).st_mtime == modified for copy in copies)
