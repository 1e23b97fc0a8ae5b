"""The job table's texts: the notice and its summary cut, job_list lines, the read's notices."""

from __future__ import annotations

from dsh.tools.jobs import DROPPED, JobTable, notice


def test_the_notice_summary_is_cut_to_120_characters() -> None:
    table = JobTable()
    short = table.new("bash", "true")
    short.settle("completed", "exit code: 0")
    assert notice(short)["source"]["summary"] == "bash true [status: completed, exit code: 0]"
    long = table.new("bash", "echo " + "x" * 200)
    long.settle("failed", "exit code: 2")
    summary = notice(long)["source"]["summary"]
    assert len(summary) == 120 and summary == ("bash echo " + "x" * 200)[:119] + "\u2026"
    assert notice(long)["content"][0]["text"].startswith(
        f"background job bash-2 (bash: echo {'x' * 200}) finished"
    )
    exact = table.new("bash", "y" * (120 - len("bash  [status: killed]")))
    exact.settle("killed", None)
    assert notice(exact)["source"]["summary"].endswith("[status: killed]")  # 120 exactly: not cut


def test_ids_count_per_kind_and_the_list_shows_each_job() -> None:
    table = JobTable()
    assert table.listing() == "(no background jobs)"
    first, second = table.new("bash", "sleep 1"), table.new("bash", "sleep 2")
    other = table.new("subagent", "review")
    assert [first.id, second.id, other.id] == ["bash-1", "bash-2", "subagent-1"]
    second.request_kill(None)
    assert table.listing() == (
        "bash-1 [bash] running \u2014 sleep 1\nbash-2 [bash] stopping \u2014 sleep 2\n"
        "subagent-1 [subagent] running \u2014 review"
    )


def test_a_read_says_when_unread_output_was_dropped_and_splits_no_character() -> None:
    job = JobTable().new("bash", "yes")
    job.stdout.cap = 10
    job.stdout.feed(b"0123456789abcdef")
    assert job.read() == f"6789abcdef\n{DROPPED}\n[status: running]"
    assert job.read() == "(no new output)\n[status: running]"  # said once
    job.stdout.feed("é".encode()[:1])
    assert job.read() == "(no new output)\n[status: running]"  # half a character waits
    job.stdout.feed("é".encode()[1:] + b"\n")
    assert job.read() == "é\n[status: running]"


def test_ten_running_or_stopping_jobs_admit_no_eleventh_until_one_finishes() -> None:
    table = JobTable()
    jobs = [table.new("bash", f"sleep {i}") for i in range(10)]
    jobs[0].request_kill(None)  # stopping still counts
    assert table.admission() == (
        "background job limit reached for this owner (limit: 10); use job_kill to stop an "
        "unneeded job, wait for it to finish, then retry"
    )
    jobs[0].settle("killed", "signal: SIGTERM")
    assert table.admission() is None
