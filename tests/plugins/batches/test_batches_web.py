"""The dashboard's Batches tab: listed in the navigation, a batch's page with its counts
and members, and a 404 page for an unknown batch."""

from __future__ import annotations

import httpx

from cogworker.app import App
from cogworker.web import create_app
from web.conftest import serve


def test_the_tab_lists_batches_and_shows_one(app: App) -> None:
    @app.job(name="work")
    def work(n: int) -> None: ...

    with app.batch("nightly import") as batch:
        work.perform_async(1)
        work.perform_async(2)
    url, server, thread = serve(create_app(app))  # a real uvicorn on 127.0.0.1
    try:
        with httpx.Client(base_url=url, timeout=20) as client:
            listing = client.get("/batches")
            assert listing.status_code == 200
            assert "nightly import" in listing.text and batch.bid in listing.text
            shown = client.get(f"/batches/{batch.bid}")
            assert shown.status_code == 200
            assert "2 total, 2 pending" in shown.text
            assert all(jid in shown.text for jid in batch.jids)
            assert client.get(f"/batches/{batch.bid}?state=dead").text.count("None.") == 1
            assert client.get("/batches/unknown").status_code == 404
            assert 'href="/batches"' in client.get("/").text
    finally:
        server.should_exit = True
        thread.join(timeout=10)
