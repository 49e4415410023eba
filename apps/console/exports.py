"""CSV exports of the console's tables. Each cell that a spreadsheet would run as a formula
(leading = + - @) is prefixed with a quote: a thread title is user text."""

from __future__ import annotations

import csv
import io

from django.http import HttpResponse

EXPORT_LIMIT = 5000


def _cell(value) -> str:
    if value is None:
        return ""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(text) else text


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def csv_response(filename: str, header: list[str], rows) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def runs_csv(report: dict) -> HttpResponse:
    header = ["run_id", "created_at", "user", "thread_id", "thread_title", "status", "model", "duration_ms",
              "input_tokens", "output_tokens", "cache_read_tokens", "total_tokens", "cost", "currency", "error"]
    rows = ([r["run_id"], r["created_at"], r["user"], r["thread_id"], r["thread_title"], r["status"], r["model_name"], r["duration_ms"],
             r["tokens"]["input"], r["tokens"]["output"], r["tokens"]["cache_read"], r["tokens"]["total"],
             r["cost"]["amount"], r["cost"]["currency"], r["error"]] for r in report["runs"])
    return csv_response(f"runs-{report['period']['since']}-{report['period']['until']}.csv", header, rows)


def usage_csv(report: dict) -> HttpResponse:
    """One row per day, then one per model (``date`` empty), so one file carries both tables."""
    header = ["date", "model", "runs", "input_tokens", "output_tokens", "cache_read_tokens", "total_tokens", "cost", "currency"]

    def cells(e: dict) -> list:
        return [e["runs"], e["tokens"]["input"], e["tokens"]["output"], e["tokens"]["cache_read"], e["tokens"]["total"],
                e["cost"]["amount"], e["cost"]["currency"]]

    rows = [[d["date"], "", *cells(d)] for d in report["days"]] + [["", m["model"], *cells(m)] for m in report["by_model"]]
    return csv_response(f"usage-{report['period']['since']}-{report['period']['until']}.csv", header, rows)


def feedback_csv(report: dict) -> HttpResponse:
    header = ["created_at", "user", "rating", "comment", "thread_id", "thread_title", "run_id", "message_id", "model"]
    rows = ([f["created_at"], f["user"], f["rating"], f["comment"], f["thread_id"], f["thread_title"], f["run_id"], f["message_id"],
             f["model_name"]] for f in report["feedback"])
    return csv_response(f"feedback-{report['period']['since']}-{report['period']['until']}.csv", header, rows)
