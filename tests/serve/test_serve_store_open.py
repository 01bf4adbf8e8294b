"""A store is served only when intact and by one server; each fault: one line, an exit code."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oltr.cli import app as cli
from oltr.client import OltrClient
from oltr.serve import ServeSettings, Store, create_app
from oltr.serve.lock import StoreLock, StoreLockedError
from oltr.serve.storecheck import StoreDamagedError, store_problems

RANKER = {
    "learner": "rtopk",
    "params": {"gamma": 0.5, "eta": 0.2},
    "n_features": 3,
    "feedback_params": {"k": 1},
}
DAMAGED, LOCKED, OPEN_FAULT = 3, 8, 5


def _play(client: TestClient | OltrClient, rounds: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        x = rng.standard_normal((20, 3))
        if isinstance(client, OltrClient):
            out = client.rank("r", x)
            client.feedback("r", out["impression"], labels=[1.0])
        else:
            out = client.post("/rankers/r/rank", json={"features": x.tolist()}).json()
            client.post(
                "/rankers/r/feedback", json={"impression": out["impression"], "labels": [1]}
            )


def _populated(path: Path, rounds: int = 40) -> Path:
    """A store with one ranker and ``rounds`` rounds, stopped cleanly."""
    with TestClient(create_app(ServeSettings(store=path))) as c:
        assert c.put("/rankers/r", json=RANKER).status_code == 201
        _play(c, rounds)
    return path


def _serve(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["serve", "--port", "0", *args])
    return result.exit_code, result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], OltrClient, Path]]:
    """A real ``oltr serve`` process on 127.0.0.1, with a ranker defined."""
    store, port = tmp_path / "live.db", _free_port()
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(store), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = OltrClient(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 60
    while True:
        try:
            if client.health():
                break
        except Exception:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.05)
    client.put_ranker("r", **RANKER)
    yield proc, client, store
    client.close()
    proc.kill()
    proc.wait(timeout=10)


# -- damaged stores: a table of cases ------------------------------------------------------


def _emptied(p: Path) -> None:
    os.truncate(p, 0)


def _truncated(p: Path) -> None:
    os.truncate(p, p.stat().st_size // 3)


def _garbage(p: Path) -> None:
    p.write_bytes(np.random.default_rng(1).bytes(50_000))


def _overwritten(p: Path) -> None:
    with open(p, "r+b") as f:  # 4 KB inside a table's pages
        f.seek(2 * 4096)
        f.write(np.random.default_rng(2).bytes(4096))


def _other_schema(p: Path) -> None:
    p.unlink()
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE impressions (ranker TEXT, id TEXT, features BLOB)")
    db.commit()
    db.close()


def _bare_sqlite(p: Path) -> None:
    p.unlink()
    db = sqlite3.connect(p)
    db.execute("VACUUM")
    db.close()


def _event_gap(p: Path) -> None:
    db = sqlite3.connect(p)
    db.execute("DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events WHERE kind = 'rank')")
    db.commit()
    db.close()


def _feedback_deleted(p: Path) -> None:
    db = sqlite3.connect(p)
    db.execute("DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)")
    db.commit()
    db.close()


def _round_gap(p: Path) -> None:
    db = sqlite3.connect(p)
    db.execute("DELETE FROM events WHERE impression = (SELECT id FROM impressions WHERE t = 5)")
    db.execute("DELETE FROM impressions WHERE t = 5")
    db.commit()
    db.close()


DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("emptied", _emptied, "the file is empty (0 bytes)"),
    ("truncated", _truncated, "the file is truncated"),
    ("garbage", _garbage, "not a SQLite database"),
    ("4 KB overwritten", _overwritten, "its pages are damaged"),
    ("other schema", _other_schema, "schema version 0 (with tables ['impressions'])"),
    ("SQLite without tables", _bare_sqlite, "schema version 0 (without tables)"),
    ("a rank event deleted", _event_gap, "impressions without their one rank event"),
    ("a feedback event deleted", _feedback_deleted, "without their one feedback event"),
    ("a round deleted", _round_gap, "rounds t have a gap"),
]


@pytest.mark.parametrize(
    ("damage", "message"), [(d, m) for _, d, m in DAMAGE], ids=[n for n, *_ in DAMAGE]
)
def test_a_damaged_store_is_refused_and_never_served_as_new(
    tmp_path: Path, damage: Callable[[Path], None], message: str
) -> None:
    store = _populated(tmp_path / "s.db")
    damage(store)
    before = store.read_bytes()
    code, err = _serve("--store", str(store))
    assert code == DAMAGED, err
    assert err.startswith(f"error: store {store} cannot be served: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert store.read_bytes() == before  # refused without writing a byte
    with pytest.raises(StoreDamagedError, match="cannot be served"):
        Store(store)
    code, err = CliRunner().invoke(cli, ["serve", "--check", "--store", str(store)]).exit_code, ""
    assert code == DAMAGED


def test_check_passes_an_intact_store_and_replays_its_log(tmp_path: Path) -> None:
    store = _populated(tmp_path / "s.db")
    result = CliRunner().invoke(cli, ["serve", "--check", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert result.output == f"store {store}: ok (1 rankers, 40 feedback rounds replayed)\n"


def test_check_finds_a_damaged_payload_only_a_replay_can_see(tmp_path: Path) -> None:
    store = _populated(tmp_path / "s.db")
    db = sqlite3.connect(store)  # valid JSON, same shape, another grade
    db.execute(
        "UPDATE events SET payload = replace(payload, '1.0', '0.0') WHERE seq = "
        "(SELECT MIN(seq) FROM events WHERE kind = 'feedback')"
    )
    db.commit()
    db.close()
    assert store_problems(store) == []  # the page and log checks cannot see it
    result = CliRunner().invoke(cli, ["serve", "--check", "--store", str(store)])
    assert result.exit_code == DAMAGED
    assert "ranker 'r': its log does not replay: replaying event 3" in result.stderr
    # A start replays the events after the last snapshot (here all): refused as well.
    code, err = _serve("--store", str(store))
    assert code == DAMAGED and "cannot be served: a ranker does not restore" in err
    assert len(err.strip().splitlines()) == 1


# -- store-open faults ------------------------------------------------------------------------


def test_store_open_faults_are_one_line_each(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = [
        (folder, f"error: store {folder} is a folder"),
        (tmp_path / "missing" / "s.db", "its folder"),
    ]
    for path, message in cases:
        code, err = _serve("--store", str(path))
        assert code == OPEN_FAULT and message in err, err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "missing").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code, err = _serve("--store", str(folder / "s.db"))
    finally:
        folder.chmod(0o700)
    assert code == OPEN_FAULT and "is not writable" in err and "Traceback" not in err


def _immutable(path: Path, on: bool) -> bool:
    """``chattr +i`` (or ``-i``): read-only even for root; False where unsupported."""
    try:
        done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    except FileNotFoundError:
        return False
    return done.returncode == 0


def test_an_immutable_store_or_folder_is_one_line(tmp_path: Path) -> None:
    store = _populated(tmp_path / "s.db", rounds=3)
    folder = tmp_path / "frozen"
    folder.mkdir()
    if not _immutable(store, True):
        pytest.skip("chattr +i is not available here")
    try:
        code, err = _serve("--store", str(store))
        assert code == OPEN_FAULT and "cannot be both read and written" in err
        assert _immutable(folder, True)
        code, err = _serve("--store", str(folder / "s.db"))
        assert code == OPEN_FAULT and f"the folder {folder} is not writable" in err
    finally:
        _immutable(store, False)
        _immutable(folder, False)


def test_a_new_store_is_made_only_where_nothing_is(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = Store(path)
    try:
        assert store.rankers() == {}
        assert not list(tmp_path.glob("*.new"))  # created beside, then renamed into place
    finally:
        store.close()
    assert store_problems(path) == []


# -- one writer per store ------------------------------------------------------------------


def test_a_second_server_on_the_same_store_is_refused_naming_the_first(
    server: tuple[subprocess.Popen[bytes], OltrClient, Path],
) -> None:
    proc, client, store = server
    _play(client, 3)
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(store), "--port", "0"]
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert second.returncode == LOCKED
    assert second.stderr.startswith(f"error: store {store} is in use by pid {proc.pid}")
    assert len(second.stderr.strip().splitlines()) == 1
    code, err = _serve("--store", str(store))
    assert code == LOCKED
    assert f"error: store {store} is in use by pid {proc.pid} on {socket.gethostname()}" in err
    with pytest.raises(StoreLockedError, match=f"pid {proc.pid}"):
        Store(store)
    assert client.ranker("r")["rounds"] == 3  # the first one serves on, untouched
    # Beside it, reading is allowed (replay), writing is not.
    reader = Store(store, readonly=True)
    try:
        assert len([e for e in reader.events("r") if e.kind == "feedback"]) == 3
    finally:
        reader.close()


def test_the_lock_goes_with_its_process_even_on_kill_9(
    server: tuple[subprocess.Popen[bytes], OltrClient, Path],
) -> None:
    proc, client, store = server
    _play(client, 5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert Path(f"{store}-wal").exists()
    reopened = Store(store)  # the WAL of the crash is there: an intact store, replayed
    try:
        assert len([e for e in reopened.events("r") if e.kind == "feedback"]) == 5
    finally:
        reopened.close()
    result = CliRunner().invoke(cli, ["serve", "--check", "--store", str(store)])
    assert result.exit_code == 0 and "5 feedback rounds replayed" in result.output


def test_a_wal_deleted_after_kill_9_is_refused(
    server: tuple[subprocess.Popen[bytes], OltrClient, Path],
) -> None:
    proc, client, store = server
    _play(client, 30)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    Path(f"{store}-wal").unlink()
    Path(f"{store}-shm").unlink(missing_ok=True)
    code, err = _serve("--store", str(store))
    assert code == DAMAGED
    assert "was not stopped cleanly and its write-ahead log live.db-wal is missing" in err
    # --check says the same, and the next start still refuses (it wrote nothing that hides it).
    assert CliRunner().invoke(cli, ["serve", "--check", "--store", str(store)]).exit_code == DAMAGED
    assert _serve("--store", str(store))[0] == DAMAGED


def test_a_wal_deleted_after_a_clean_stop_loses_nothing(tmp_path: Path) -> None:
    store = _populated(tmp_path / "s.db", rounds=10)
    Path(f"{store}-wal").unlink(missing_ok=True)  # a clean stop copied it in and removed it
    db = Store(store)
    try:
        assert len([e for e in db.events("r") if e.kind == "feedback"]) == 10
    finally:
        db.close()


def test_the_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    lock = StoreLock.acquire(tmp_path / "s.db")
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}"):
        StoreLock.acquire(tmp_path / "s.db")
    lock.release()
    StoreLock.acquire(tmp_path / "s.db").release()


# -- token file --------------------------------------------------------------------------------


def test_a_token_file_of_two_lines_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\nsecond\n")
    code, err = _serve("--store", str(tmp_path / "s.db"), "--token-file", str(token))
    assert code == 2 and "has 2 non-empty lines" in err
    assert not (tmp_path / "s.db").exists()
