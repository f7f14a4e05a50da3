"""A soak of the served app's trace upload (issue 40): what the server's memory does over
many uploads -- hostile and valid -- each from a new visitor's session that then closes.

    python scripts/soak_uploads.py FILE [FILE ...] [--uploads 50] [--chromium PATH]

Starts the app (``streamlit run app.py`` on a free port of this machine), opens a fresh
browser session per upload (Chromium through Playwright: the uploader is the page's own
widget), picks "Uploaded trace", gives it the next file (round robin over FILE...), waits
for the page's answer ("Loaded ..." or "Cannot read ..."), and closes the session. It
prints, per upload, the server's resident memory (VmRSS) and CPU seconds, then the
resident memory after the sessions' time to live (``server.disconnectedSessionTTL``, 10 s)
and an idle minute. A measurement, not a test: nothing here passes or fails.

Needs Chromium (``apt-get install chromium``; ``--chromium`` names another build) and
Playwright (``pip install playwright``; its own browser download is never used).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_server(proc, url: str) -> None:
    import urllib.request
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=60):
                return
        except OSError:
            time.sleep(0.5)


def upload(browser, url: str, path: Path, ceiling_ms: int) -> str:
    """One visitor: a new session uploads ``path``; the page's answer, then closes."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(ceiling_ms)
    try:
        page = context.new_page()
        page.goto(url + "/?source=upload")
        box = page.locator('[data-testid="stFileUploader"] input[type="file"]')
        box.wait_for(state="attached")
        box.set_input_files(str(path))
        answer = page.locator('[data-testid="stAlert"], [data-testid="stAlertContainer"]'
                              ).filter(has_text=path.name)
        answer.first.wait_for()
        return answer.first.inner_text().splitlines()[0][:160]
    finally:
        context.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", type=Path, help="trace files to upload, in turn")
    p.add_argument("--uploads", type=int, default=50)
    p.add_argument("--chromium", default=os.environ.get("MEDAL_CHROMIUM", "/usr/bin/chromium"))
    p.add_argument("--idle", type=float, default=60.0,
                   help="seconds to wait after the last session's time to live")
    p.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = p.parse_args(argv)
    for f in args.files:
        if not f.is_file():
            raise SystemExit(f"no file at {f}")
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"soak-{port}.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
         str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
         "--server.maxUploadSize", "21", "--server.disconnectedSessionTTL", "10"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        wait_for_server(server, url + "/_stcore/health")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium,
                                         args=["--no-sandbox", "--disable-gpu"])
            try:
                upload(browser, url, args.files[-1], 3_600_000)      # warm the page up
                time.sleep(25)
                start_rss, start_cpu = rss_mb(server.pid), cpu_s(server.pid)
                print(f"start: {start_rss:,.0f} MB resident, {start_cpu:.1f} CPU-s")
                peak = start_rss
                for i in range(args.uploads):
                    f = args.files[i % len(args.files)]
                    c0 = cpu_s(server.pid)
                    answer = upload(browser, url, f, 3_600_000)
                    rss, c1 = rss_mb(server.pid), cpu_s(server.pid)
                    peak = max(peak, rss)
                    rows.append({"upload": i + 1, "file": f.name, "bytes": f.stat().st_size,
                                 "answer": answer, "rss_mb": round(rss, 1),
                                 "server_cpu_s": round(c1 - c0, 2)})
                    print(f"{i + 1:3d} {f.name[:48]:48s} {rss:7,.0f} MB  "
                          f"{c1 - c0:5.1f} CPU-s  {answer[:70]}")
            finally:
                browser.close()
        time.sleep(10 + 5)          # the sessions' time to live, and its sweep
        after_ttl = rss_mb(server.pid)
        time.sleep(args.idle)
        idle = rss_mb(server.pid)
        summary = {"start_mb": round(start_rss, 1), "peak_mb": round(peak, 1),
                   "after_sessions_closed_mb": round(after_ttl, 1),
                   "after_idle_mb": round(idle, 1), "uploads": len(rows),
                   "server_cpu_s": round(cpu_s(server.pid) - start_cpu, 1)}
        print(f"start {summary['start_mb']:,.0f} MB, peak {summary['peak_mb']:,.0f} MB, "
              f"sessions closed {summary['after_sessions_closed_mb']:,.0f} MB, after "
              f"{args.idle:.0f} s idle {summary['after_idle_mb']:,.0f} MB; "
              f"{summary['server_cpu_s']:.1f} server CPU-s for {len(rows)} uploads")
        if args.json:
            args.json.write_text(json.dumps({"summary": summary, "uploads": rows}, indent=1))
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
