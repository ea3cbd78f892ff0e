"""A FastAPI app that enqueues a job per sign-up: ``uvicorn web:api`` (from this folder)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException
from jobs import app, send_welcome
from pydantic import BaseModel


@asynccontextmanager
async def lifespan(api: FastAPI) -> AsyncIterator[None]:
    yield
    app.close()  # the app's Redis connections


api = FastAPI(title="cogworker FastAPI example", lifespan=lifespan)


class SignUp(BaseModel):
    email: str


class Enqueued(BaseModel):
    jid: str | None  # None only when a unique job's duplicate was skipped


@api.post("/signups", status_code=202)
def sign_up(signup: SignUp) -> Enqueued:
    """Enqueue the welcome mail. A plain ``def``: FastAPI runs it in a thread, so the push
    (a blocking Redis round trip) never stalls the event loop."""
    if "@" not in signup.email:
        raise HTTPException(status_code=422, detail="not an e-mail address")
    return Enqueued(jid=send_welcome.perform_async(signup.email))
