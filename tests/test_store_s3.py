"""The run history on an object store (#49): `--store s3://BUCKET/PATH` configured only by the
standard AWS variables, against moto's S3 server (started here on 127.0.0.1, with IAM
authentication on, ended after): add, list, trend, check and sql give what a local store of the
same runs gives; a wrong endpoint, a missing bucket or a refused key is one line and exit 2 with
nothing written; adds and compactions from several processes at once lose nothing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest
from conftest import run_ttdash
from history_fixture import scaled_copy

SMALL = "tt-perf-report__bh20_oft_integral_image_trace.csv"
REGION = "us-east-1"
#: moto's server: requests before this many are not authenticated (the fixture's IAM set-up)
ADMIN_ACTIONS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto():
    """moto's S3 + IAM server on 127.0.0.1 (a free port) and a key allowed s3:* on it:
    (endpoint, key id, secret). Ended after the module."""
    import boto3  # moto's own dependency

    port = _free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(ADMIN_ACTIONS)}
    server = subprocess.Popen(
        [sys.executable, "-c", "import sys; from moto.server import main; main(sys.argv[1:])",
         "-H", "127.0.0.1", "-p", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # bounded poll: the port answers
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "moto's server ended"
                assert time.monotonic() < deadline, "moto's server did not start in 30 s"
                time.sleep(0.05)
        iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION,
                           aws_access_key_id="admin", aws_secret_access_key="admin")
        iam.create_user(UserName="ci")
        key = iam.create_access_key(UserName="ci")["AccessKey"]
        iam.put_user_policy(UserName="ci", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        yield endpoint, key["AccessKeyId"], key["SecretAccessKey"]
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


@pytest.fixture
def bucket(moto, monkeypatch):
    """A new bucket, and the standard variables set for it: (bucket name, s3 client)."""
    import boto3

    endpoint, key, secret = moto
    for name, value in (("AWS_ENDPOINT_URL", endpoint), ("AWS_ACCESS_KEY_ID", key),
                        ("AWS_SECRET_ACCESS_KEY", secret), ("AWS_REGION", REGION)):
        monkeypatch.setenv(name, value)
    name = f"fleet-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                      aws_access_key_id=key, aws_secret_access_key=secret)
    s3.create_bucket(Bucket=name)
    return name, s3


def _objects(s3, name: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=name).get("Contents", []))


def _json(*args: str):
    res = run_ttdash(*args, "-f", "json")
    assert res.returncode == 0, (args, res.stderr)
    return json.loads(res.stdout)


def test_an_s3_store_answers_as_a_local_one(real, tmp_path, bucket):
    name, s3 = bucket
    uri, local = f"s3://{name}/ci/history", str(tmp_path / "local")
    paths = [scaled_copy(real / SMALL, tmp_path / f"r{i}.csv", f)
             for i, f in enumerate((1.0, 1.02, 0.99))]
    for store in (uri, local):
        for i, p in enumerate(paths):
            res = run_ttdash("history", "add", "--store", store, str(p), "--label", f"n={i}")
            assert res.returncode == 0 and " added " in res.stdout, res.stderr
    keys = _objects(s3, name)
    assert len([k for k in keys if k.startswith("ci/history/ops/arch=")
                and k.endswith("/ops.parquet")]) == 3
    assert not [k for k in keys if "/.tmp-" in k]

    def numbers(doc: dict, key: str) -> list:
        return [(r["run_id"], r.get("ops"), r["device_time_us"], r["steady_us"])
                for r in doc[key]]

    got = {}
    for store in (uri, local):
        got[store] = {
            "list": numbers(_json("history", "list", "--store", store), "runs"),
            "trend": numbers(_json("history", "trend", "--store", store, "--op",
                                   "MoveDeviceOperation"), "runs"),
            "check": {k: v for k, v in _json(
                "history", "check", "--store", store, str(paths[0]), "--fail-above", "50"
            ).items() if k in ("baseline_runs", "pct", "median_us", "regression")},
            "sql": _json("history", "sql", "--store", store,
                         "SELECT r.run_id, r.ops, count(*), sum(o.device_time_us) FROM ops o "
                         "JOIN runs r USING (run_id) GROUP BY ALL ORDER BY r.run_id")["rows"],
        }
    assert got[uri] == got[local]
    assert len(got[uri]["list"]) == 3 and len(got[uri]["check"]["baseline_runs"]) == 2
    assert [r[1] for r in got[uri]["sql"]] == [r[2] for r in got[uri]["sql"]]


def test_a_wrong_endpoint_bucket_or_key_is_one_line_and_writes_nothing(real, tmp_path, bucket,
                                                                        monkeypatch):
    name, s3 = bucket
    csv = str(real / SMALL)
    uri = f"s3://{name}/h"

    def refused(*args: str, env: dict[str, str] | None = None) -> str:
        res = run_ttdash("history", *args, env=env)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, (args, res.stderr)
        assert "Traceback" not in res.stderr
        return res.stderr

    # a bucket that does not exist: said as such, and not created
    for args in (("list",), ("add", csv)):
        err = refused(*args[:1], "--store", f"s3://{name}-missing/h", *args[1:])
        assert f"s3://{name}-missing/h: bucket '{name}-missing' does not exist" in err
    assert f"{name}-missing" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # a key the server refuses
    for args in (("list",), ("add", csv), ("sql", "SELECT 1")):
        err = refused(*args[:1], "--store", uri, *args[1:],
                      env={"AWS_SECRET_ACCESS_KEY": "not-the-secret"})
        assert err.startswith(f"ttdash: {uri}: cannot reach the store: access denied "
                              "(check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"), err
    # an endpoint where nothing listens
    nothing = f"http://127.0.0.1:{_free_port()}"
    err = refused("add", "--store", uri, csv, env={"AWS_ENDPOINT_URL": nothing})
    assert err.startswith(f"ttdash: {uri}: cannot reach the store: no connection to "
                          f"AWS_ENDPOINT_URL={nothing}"), err
    assert _objects(s3, name) == []


@pytest.mark.slow  # ~10 s: six interpreters on two cores
def test_adds_and_compactions_at_once_on_s3_lose_nothing(real, tmp_path, bucket):
    from test_store_fleet import COMPACTOR, end_all, failed_writers

    name, s3 = bucket
    uri = f"s3://{name}/fleet"
    paths = [scaled_copy(real / SMALL, tmp_path / f"w{i}.csv", 1 + i / 10) for i in range(6)]
    stop = tmp_path / "stop"
    code = COMPACTOR.replace("os.path.isdir(root)", "True")
    procs = [subprocess.Popen([sys.executable, "-c", code, uri, str(stop), "arch=blackhole_p150"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    writers = [subprocess.Popen([sys.executable, "-m", "ttdash", "history", "add", "--store",
                                 uri, str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for p in paths]
    procs += writers
    try:
        results = [w.communicate(timeout=120) for w in writers]
        stop.touch()
        merged, err = procs[0].communicate(timeout=60)
    finally:
        end_all(stop, procs)
    assert [w.returncode for w in writers] == [0] * len(paths), failed_writers(writers, results)
    assert procs[0].returncode == 0 and int(merged) > 0, err  # it merged while adds ran
    ids = sorted(out.split()[0] for out, _ in results)
    doc = _json("history", "sql", "--store", uri, "SELECT r.run_id, r.ops, count(o.run_id) "
                "FROM runs r LEFT JOIN ops o USING (run_id) GROUP BY ALL ORDER BY r.run_id")
    assert [r[0] for r in doc["rows"]] == ids and all(r[1] == r[2] for r in doc["rows"])
    # a last compaction folds whatever two merges at once left: one runs file, every run once
    from ttdash.history.store import Store

    Store.open(uri).compact("arch=blackhole_p150", above=1)
    runs_files = [k for k in _objects(s3, name) if k.startswith("fleet/runs/")
                  and k.endswith(".parquet")]
    assert len(runs_files) == 1, runs_files
    assert sorted(r["run_id"] for r in _json("history", "list", "--store", uri)["runs"]) == ids
