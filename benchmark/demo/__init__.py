"""The synthetic demo: seeded EEG generators (:mod:`.signals`), the demo's own EEG questions
(:mod:`.questions`) and writers of the six raw dataset layouts (:mod:`.raw`), from which
``manage.py build_demo_release`` builds the demo suite with the real dataset builders."""
