"""The dashboard mounted in FastAPI, Flask and Django, each behind the host's own login.

``tests/web/test_mounting.py`` runs every one of these.
"""
