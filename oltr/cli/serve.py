"""``oltr serve`` and ``oltr replay``: run the HTTP ranker service; replay and evaluate its log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from oltr.errors import DataFormatError, InputError, OltrError

#: The modules of the web stack, installed by the extra ``oltr[serve]``.
WEB_STACK = frozenset(
    {"fastapi", "starlette", "anyio", "uvicorn", "httptools", "uvloop", "prometheus_client"}
)

StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite file of the service's state.")]


def _fail(exc: BaseException) -> NoReturn:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(code=2)


def _token(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        _fail(exc)
    if not lines:
        _fail(ValueError(f"--token-file {path} is empty"))
    if len(lines) > 1:
        _fail(
            ValueError(
                f"--token-file {path} has {len(lines)} non-empty lines; it must hold the token "
                "alone, on one line"
            )
        )
    return lines[0]


def _check(store: Path) -> None:
    """``oltr serve --check``: say what is wrong with ``store``; exit 0 when nothing is."""
    from oltr.serve.audit import audit_store

    problems, summary = audit_store(store)
    if not problems:
        typer.echo(f"store {store}: ok ({summary})")
        return
    for problem in problems:
        typer.echo(f"store {store}: {problem}", err=True)
    raise typer.Exit(code=DataFormatError.exit_code)


def serve(
    store: StoreOpt = Path("oltr-serve.db"),
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8000,
    token_file: Annotated[
        Path | None, typer.Option(help="File holding the bearer token every request must carry.")
    ] = None,
    impression_ttl: Annotated[
        float, typer.Option(help="Seconds after which an impression without feedback expires.")
    ] = 3600.0,
    snapshot_every: Annotated[int, typer.Option(help="Feedback rounds between snapshots.")] = 100,
    max_body: Annotated[int, typer.Option(help="Largest request body in bytes.")] = 1 << 20,
    sync: Annotated[
        str,
        typer.Option(
            help="SQLite synchronous: FULL (a commit survives a power cut; waits for fsync) "
            "or NORMAL (survives a crash of the process, not of the machine; no fsync wait)."
        ),
    ] = "FULL",
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    timeout_keep_alive: Annotated[
        int, typer.Option(help="Seconds an idle connection stays open after a response.")
    ] = 5,
    timeout_header: Annotated[
        float, typer.Option(help="Seconds a client has to send a complete request head.")
    ] = 10.0,
    limit_concurrency: Annotated[
        int, typer.Option(help="Open connections or requests beyond which a request gets a 503.")
    ] = 1000,
    timeout_graceful_shutdown: Annotated[
        int, typer.Option(help="Seconds a stopping server waits for requests in progress.")
    ] = 30,
    max_cells: Annotated[
        int,
        typer.Option(help="Most rows x features in one rank request (8 bytes each in memory)."),
    ] = 1_000_000,
    max_items: Annotated[
        int, typer.Option(help="Largest n_items of a ranker's definition (a fixed item set).")
    ] = 10_000,
    max_features: Annotated[
        int, typer.Option(help="Largest n_features of a ranker's definition.")
    ] = 100_000,
    max_pending_bytes: Annotated[
        int,
        typer.Option(
            help="Memory for pending impressions over all rankers; beyond it the oldest are "
            "read back from the store when their feedback comes."
        ),
    ] = 64 << 20,
    check: Annotated[
        bool, typer.Option("--check", help="Verify --store (and replay its log), then exit.")
    ] = False,
) -> None:
    """Serve rankers over HTTP; state in --store survives restarts (README: "Serving a ranker")."""
    if check:
        _check(store)
        return
    try:
        import uvicorn

        from oltr.serve.app import ServeSettings, create_app, freeze_long_lived
        from oltr.serve.connections import (
            ConnectionLimits,
            raise_open_files_limit,
            uvicorn_config,
        )
        from oltr.serve.limits import Limits
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in WEB_STACK:
            raise
        raise InputError(
            f"oltr serve needs the web stack ({exc.name} is not installed): "
            'pip install "oltr[serve]"'
        ) from None

    try:
        limits = ConnectionLimits(
            timeout_keep_alive=timeout_keep_alive,
            timeout_header=timeout_header,
            limit_concurrency=limit_concurrency,
            timeout_graceful_shutdown=timeout_graceful_shutdown,
        )
        settings = ServeSettings(
            store=store,
            token=_token(token_file),
            impression_ttl=impression_ttl,
            snapshot_every=snapshot_every,
            max_body=max_body,
            synchronous=sync,
            limits=Limits(
                max_cells=max_cells,
                max_items=max_items,
                max_features=max_features,
                max_pending_bytes=max_pending_bytes,
            ),
        )
        app = create_app(settings)
    except OltrError:
        raise  # a store that is locked, damaged or cannot be opened: its own exit code
    except (ValueError, OSError) as exc:
        _fail(exc)
    raise_open_files_limit(limits.limit_concurrency)
    freeze_long_lived()  # short full collections: no pause of 100 ms in the latency tail
    config = uvicorn_config(app, host, port, limits, log_level=log_level)
    _announcing_server(uvicorn.Server, config, store, settings.token is not None).run()


def _addresses(server: Any) -> list[str]:
    """The URL of every socket ``server`` listens on: the port it bound, ``--port 0`` too."""
    out = []
    for listener in server.servers:
        for sock in listener.sockets or ():
            host, port = sock.getsockname()[:2]
            out.append(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
    return out


def _announcing_server(base: Any, config: Any, store: Path, token: bool) -> Any:
    """A uvicorn server (``base``: ``uvicorn.Server``) that says on stdout, once it listens,
    where, on which store, and whether a bearer token is required (never the token)."""

    class Announcing(base):  # type: ignore[misc]
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if not self.started:
                return
            urls = _addresses(self)
            page = f"; the page: {urls[0]}/ui/" if urls else ""
            typer.echo(f"oltr serve listening on {', '.join(urls)}{page}")
            need = "required" if token else "not required"
            typer.echo(f"oltr serve store: {store.resolve()}; bearer token {need}")
            sys.stdout.flush()

    return Announcing(config)


def _judge(
    store: Path, ranker: str, candidate: str, options: dict[str, Any], as_json: bool
) -> None:
    """``oltr replay --candidate``: judge a candidate off-policy on ``ranker``'s log."""
    from rich.console import Console
    from rich.table import Table

    from oltr.serve.evalcandidates import candidate_from_spec
    from oltr.serve.evaluation import ESTIMATOR_NAMES, evaluate, logged_impressions
    from oltr.serve.protocol import RequestError
    from oltr.serve.store import Store

    chosen = options.pop("estimator")
    names = ESTIMATOR_NAMES if chosen == "all" else (chosen,)
    db = Store(store, readonly=True)
    try:
        logged = logged_impressions(db, ranker)
        cand = candidate_from_spec(db, candidate, logged)
        result = evaluate(logged, cand, estimators=names, **options).to_dict()
    except (OltrError, RequestError) as exc:
        _fail(exc)
    finally:
        db.close()
    if not result["estimates"]:
        _fail(InputError(f"no estimator can judge this log: {result['unavailable']}"))
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return
    level = round(100 * (1 - result["alpha"]))
    table = Table(
        title=f"{result['metric']} of {result['candidate']} judged on the {result['impressions']} "
        f"logged impressions of ranker {ranker!r} ({level}% intervals)"
    )
    for col in ("estimator", "value", "interval", "method", "matched"):
        table.add_column(col)

    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    for row in [*result["estimates"], {**result["on_policy"], "estimator": "logged (on-policy)"}]:
        span = f"[{num(row['ci_low'])}, {num(row['ci_high'])}]"
        table.add_row(
            row["estimator"], num(row["value"]), span, row["interval"], str(row["matched"])
        )
    Console().print(table)
    skipped = {k: v for k, v in result["skipped"].items() if v}
    if skipped:
        typer.echo(f"left out: {skipped}")
    for name, why in result["unavailable"].items():
        typer.echo(f"{name}: not available: {why}")


def replay(
    ranker: Annotated[str, typer.Option(help="Name of the ranker whose log is replayed.")],
    path: Annotated[
        Path | None,
        typer.Argument(help="SQLite file of the service's state (or --store).", show_default=False),
    ] = None,
    store: Annotated[
        Path | None, typer.Option("--store", help="SQLite file of the service's state.")
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option(
            help="Judge this candidate off-policy: a ranker of the store, a ranker definition "
            "(.json, as PUT takes it) or a model file of oltr logs fit."
        ),
    ] = None,
    estimator: Annotated[
        str, typer.Option(help="With --candidate: ips, snips, pbm-ips, cascade-dr or all.")
    ] = "all",
    metric: Annotated[
        str, typer.Option(help="With --candidate: clicks, ctr@k or dcg@k (clicks@k too).")
    ] = "clicks",
    interval: Annotated[
        str,
        typer.Option(help="With --candidate: studentized or bca (bootstrap), or bernstein."),
    ] = "studentized",
    alpha: Annotated[float, typer.Option(help="With --candidate: 1 - coverage.")] = 0.05,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --candidate: print the numbers as JSON.")
    ] = False,
    learner: Annotated[
        str | None, typer.Option(help="Candidate learner to evaluate on the log (IPS).")
    ] = None,
    params: Annotated[str, typer.Option(help="The candidate's parameters as JSON.")] = "{}",
    reward: Annotated[str, typer.Option(help="Reward: ctr@1 or dcg (of the top-j labels).")] = (
        "ctr@1"
    ),
    depth: Annotated[
        int | None, typer.Option(help="Prefix length j the estimate matches on (default: all).")
    ] = None,
) -> None:
    """Re-run a ranker's logged events into a fresh learner and estimate rankers' value (IPS).

    With --candidate: judge that candidate off-policy on the ranker's logged impressions
    (IPS, SNIPS, PBM-IPS, Cascade-DR with intervals; the off-policy guide).
    """
    given = [p for p in (path, store) if p is not None]
    if len(given) != 1:
        _fail(ValueError("give the store once: as the argument STORE or as --store"))
    store = given[0]
    if candidate is not None:
        if learner is not None:
            _fail(ValueError("--candidate and --learner are two ways to judge: give one"))
        if estimator not in ("all", "ips", "snips", "pbm-ips", "cascade-dr"):
            _fail(ValueError("--estimator must be ips, snips, pbm-ips, cascade-dr or all"))
        if interval not in ("studentized", "bca", "bernstein"):
            _fail(ValueError(f"--interval must be studentized, bca or bernstein, got {interval!r}"))
        if not store.is_file():
            _fail(FileNotFoundError(f"store {store}: no such file"))
        opts = {"estimator": estimator, "metric": metric, "interval": interval, "alpha": alpha}
        _judge(store, ranker, candidate, opts, as_json)
        return
    from rich.console import Console
    from rich.table import Table

    from oltr.serve.protocol import RankerDefinition, RequestError
    from oltr.serve.replay import (
        REWARDS,
        estimate_learner,
        estimate_weights,
        logged_rounds,
        on_policy,
        replay_log,
    )
    from oltr.serve.store import Store

    if reward not in REWARDS:
        _fail(ValueError(f"--reward must be one of {sorted(REWARDS)}, got {reward!r}"))
    if not store.is_file():
        _fail(FileNotFoundError(f"--store {store}: no such file"))
    db = Store(store, readonly=True)
    try:
        fresh, defn, rounds = replay_log(db, ranker)
        typer.echo(f"replayed {rounds} feedback rounds of ranker {ranker!r} into a fresh learner")
        logged = logged_rounds(db, ranker)
        rows: list[tuple[str, Any]] = [("logged (on-policy)", on_policy(logged, reward, depth))]
        if hasattr(type(fresh), "weights_"):
            weights = fresh.weights_  # type: ignore[attr-defined]
            typer.echo(f"weights: {json.dumps(weights[0].tolist())}")
            rows.append(
                ("final weights, greedy", estimate_weights(logged, weights[0], reward, depth))
            )
        if learner is not None:
            cand = RankerDefinition(
                **{**defn.to_dict(), "learner": learner, "params": json.loads(params)}
            )
            rows.append((f"candidate {learner}", estimate_learner(logged, cand, reward, depth)))
    except (ValueError, RequestError, json.JSONDecodeError) as exc:
        _fail(exc)
    finally:
        db.close()
    table = Table(title=f"{reward} estimated from {len(logged)} logged rounds (IPS)")
    for col in ("ranker", "value", "std. error", "rounds", "matched"):
        table.add_column(col)
    for label, res in rows:
        table.add_row(label, f"{res.value:.4f}", f"{res.stderr:.4f}", str(res.n), str(res.matched))
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``replay`` to the root app."""
    app.command("serve")(serve)
    app.command("replay")(replay)
