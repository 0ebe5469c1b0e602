import statistics


def spread(values):
    return statistics.pstdev(values) if len(values) > 1 else 0.0
