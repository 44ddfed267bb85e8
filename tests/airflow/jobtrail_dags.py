"""DAGs for jobtrail's Airflow tests (copied into the test server's DAGs folder; parsed by
Airflow, never imported by the test suite)."""

from __future__ import annotations

import time
from datetime import datetime

from airflow.sdk import dag, task

START = datetime(2024, 1, 1)


@dag(dag_id="jobtrail_ok", schedule=None, start_date=START, catchup=False)
def jobtrail_ok():
    @task(task_id="work")
    def work(**context):
        time.sleep(1)
        conf = context["dag_run"].conf or {}
        return {"answer": 42, "rows": conf.get("rows", 0)}  # pushed as XCom return_value

    work()


@dag(dag_id="jobtrail_fail", schedule=None, start_date=START, catchup=False)
def jobtrail_fail():
    @task(task_id="work", retries=0)
    def work():
        raise RuntimeError("jobtrail test: this task fails on purpose")

    work()


@dag(dag_id="jobtrail_wait", schedule=None, start_date=START, catchup=False)
def jobtrail_wait():
    @task(task_id="work")
    def work():
        time.sleep(20)
        return "waited"

    work()


@dag(dag_id="jobtrail_slow", schedule=None, start_date=START, catchup=False)
def jobtrail_slow():
    @task(task_id="work")
    def work():
        time.sleep(600)  # long enough to be cancelled
        return "late"

    work()


jobtrail_ok()
jobtrail_fail()
jobtrail_wait()
jobtrail_slow()
