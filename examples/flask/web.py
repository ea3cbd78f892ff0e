"""A Flask app that enqueues a report per request: ``flask --app web run`` (from this folder)."""

from __future__ import annotations

import re

from flask import Flask, abort, jsonify, request
from flask.typing import ResponseReturnValue
from jobs import build_report

web = Flask(__name__)
MONTH = re.compile(r"\d{4}-\d{2}")


@web.post("/accounts/<account>/reports")
def request_report(account: str) -> ResponseReturnValue:
    month = request.form.get("month", "")
    if not MONTH.fullmatch(month):
        abort(400, description="month must look like 2024-05")
    jid = build_report.perform_async(account, month)
    return jsonify(jid=jid), 202
