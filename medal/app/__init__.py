"""The Streamlit app, inside the package so that an installed ``medal`` serves it from
any directory (``medal app``).

``main.py`` is the entry script Streamlit runs (it only lays out the navigation); the
pages are in ``pages/``. The repository's top-level ``app.py`` and ``pages/*.py`` are thin
entry points to the same code, for ``streamlit run app.py`` in a checkout.
"""
from __future__ import annotations

import runpy
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent
MAIN = APP_DIR / "main.py"
PAGES_DIR = APP_DIR / "pages"
#: (file in pages/, title); the first is the default page. The file names are the URLs.
PAGES = (("run.py", "Run"), ("how_medal_works.py", "How MEDAL works"),
         ("benchmark.py", "Benchmark"))


def warm() -> None:
    """While the server starts: import what the Run page needs (torch among it) and compute
    the shipped examples' frames and the viewer's library, in the background, so that the
    first visitor's page waits for none of it (issue 18: page load -> interactive tree;
    the server's first page took ~5 s, its later ones ~2 s). ``medal app`` calls it."""
    import threading

    def work():
        try:
            from ..viewer import warm_examples
            from . import components
            components.viewer_lib()
            import medal.engine  # noqa: F401  (torch, the engine: the Run page's imports)
            warm_examples()
        except Exception:   # the page shows any error itself when it runs
            pass
    threading.Thread(target=work, name="medal-warm-app", daemon=True).start()


def navigate(page_dir: str = "pages") -> None:
    """Set up the app and run the page the visitor asked for. ``page_dir``: where the page
    files are, relative to the entry script (the package's own ``pages/`` for ``medal
    app``; the checkout's thin ``pages/`` for ``streamlit run app.py``)."""
    import streamlit as st

    from ..serving import keep_on_machine

    keep_on_machine()  # Streamlit never asks the internet for this machine's address
    # No icons: Streamlit fetches a Material icon used as a page's favicon from
    # fonts.gstatic.com, and this app loads nothing from outside the machine.
    st.set_page_config(page_title="MEDAL Explorer", layout="wide")
    page = st.navigation([st.Page(f"{page_dir}/{name}", title=title, default=i == 0)
                          for i, (name, title) in enumerate(PAGES)])
    if getattr(page, "title", "Run") != "Run":
        left_run_page()
    page.run()


def left_run_page() -> None:
    """Note that another page ran: the Run page's settings were not drawn, and the browser
    may hold stale states for their widgets (the Run page gives them fresh keys)."""
    import streamlit as st
    st.session_state["away_from_run_page"] = True


def run_page(name: str) -> None:
    """Run the package's page ``name`` (``"run"``, ``"how_medal_works"``, ``"benchmark"``)
    afresh, as Streamlit runs a page script on every rerun."""
    path = PAGES_DIR / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"no page {name!r}; pages: {', '.join(p for p, _ in PAGES)}")
    if name != "run":
        left_run_page()
    runpy.run_path(str(path), run_name="__main__")
