"""``manage.py download_dataset NAME --to DIR``: fetch a raw public dataset from its publisher."""

from django.core.management.base import BaseCommand, CommandError

from benchmark.downloads import DATASETS, DownloadError, download_dataset


class Command(BaseCommand):
    help = (
        "Fetch a raw dataset from its publisher into DIR; interrupted files resume when run again. Datasets: "
        + "; ".join(f"{name}: {dataset.description}" for name, dataset in DATASETS.items())
    )

    def add_arguments(self, parser):
        parser.add_argument("name", choices=sorted(DATASETS), help="the dataset")
        parser.add_argument("--to", required=True, help="folder for the dataset's files")
        parser.add_argument("--base-url", help="replace the publisher's base URL (a mirror)")
        parser.add_argument(
            "--include", action="append", metavar="PATTERN",
            help="only files whose relative path matches this shell pattern (repeatable), e.g. 'chb01/*'",
        )

    def handle(self, *args, **options):
        try:
            result = download_dataset(
                options["name"], to=options["to"], base_url=options["base_url"], include=options["include"]
            )
        except DownloadError as exc:
            raise CommandError("\n".join(exc.problems)) from None
        extracted = f", {result.extracted} extracted from archives" if result.extracted else ""
        self.stdout.write(
            f"{len(result.files)} file(s) in {result.root}, {result.fetched} fetched{extracted}"
        )
