"""``manage.py download_release --to DIR``: fetch the official release's data from the Hugging Face Hub."""

from django.core.management.base import BaseCommand, CommandError

from benchmark.downloads import HF_REPO_ID, DownloadError, download_release


class Command(BaseCommand):
    help = (
        f"Fetch data/ and metadata/ of the Hugging Face dataset {HF_REPO_ID} into DIR and check every file's "
        "size against the Hub and the release manifest. Interrupted downloads resume when run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, help="the release root (e.g. a checkout of the official repo)")
        parser.add_argument("--endpoint", help="Hub base URL (default: HF_ENDPOINT or huggingface.co)")
        parser.add_argument("--repo", default=HF_REPO_ID, help=f"dataset repository (default {HF_REPO_ID})")
        parser.add_argument("--revision", default="main", help="branch, tag or commit (default main)")
        parser.add_argument(
            "--manifest", help="release manifest to verify against (default DIR/benchmark/manifests/files.jsonl)"
        )

    def handle(self, *args, **options):
        try:
            result = download_release(
                to=options["to"], endpoint=options["endpoint"], repo_id=options["repo"],
                revision=options["revision"], manifest=options["manifest"],
            )
        except DownloadError as exc:
            raise CommandError("\n".join(exc.problems)) from None
        checked = f"sizes checked against the Hub and {result.manifest}" if result.manifest else (
            "sizes checked against the Hub (no release manifest found)"
        )
        self.stdout.write(f"{result.files} file(s) in {result.root}, {result.fetched} fetched; {checked}")
