from concurrent.futures import ThreadPoolExecutor


class PeakDecoder:
    """Turns per-frame scores into peak positions, one track at a time."""

    def __call__(self, scores, valid):
        with ThreadPoolExecutor() as pool:
            return list(pool.map(self._one_track, scores, valid))

    def _one_track(self, track_scores, track_valid):
        kept = track_scores[track_valid]
        return (kept > 0).nonzero()[:, 0]
