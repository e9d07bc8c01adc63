"""Scrape /metrics and parse it with prometheus_client's own parser."""

from prometheus_client.parser import text_string_to_metric_families


def scrape(client, **extra) -> tuple[dict, str]:
    """({(sample name, sorted labels): value}, the exposition text)."""
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples, text


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)
