"""Debian's headless Chromium driven through its chromedriver, as the browser tests and bench/first_visit.py start it."""
from pathlib import Path

from selenium import webdriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000",
)  # fmt: skip


def installed() -> bool:
    """Whether Chromium and its driver are there (apt-get install chromium chromium-driver)."""
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def start_chromium(profile: Path, *flags: str, logs: dict[str, str]) -> webdriver.Chrome:
    """Headless Chromium with its own profile directory, ``flags`` beyond the usual ones, and the ``logs`` kept
    (goog:loggingPrefs, e.g. {"browser": "ALL"})."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, *flags, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", logs)
    return webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
