"""Reading a Prometheus scrape in tests."""

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(scrape: dict, name: str, **labels) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)
