import argparse

from models import TaggerModel
from runs.fitting import fit_model
from runs.testing import test_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tpu_cores", type=int, default=8)
    parser.add_argument("--skip_test", action="store_true")
    args = parser.parse_args()
    model = TaggerModel()
    best = fit_model(model, args.tpu_cores)
    if not args.skip_test:
        test_model(model, args.tpu_cores, best)


if __name__ == "__main__":
    main()
