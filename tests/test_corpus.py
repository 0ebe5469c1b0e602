"""The hand-checked locations of ../shared/corpus/EXAMPLES.md, on the real corpus.

Opt-in: `pytest --corpus PATH` (the folder ../shared/corpus/fetch.sh fills). Every real
example a rule targets must be reported on its line (a finding whose span covers the line);
every trap must stay silent for the rules it is a trap for. The corpus is checked once per
session with all rules enabled, through the same runner the CLI uses (project index included).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tpulint.config.settings import Config
from tpulint.runner.paths import check_paths

pytestmark = pytest.mark.corpus

HOST_SYNC = ("TPU101", "TPU102", "TPU103", "TPU104", "TPU205")
SHAPES = ("TPU201", "TPU202", "TPU203", "TPU205")

# (EXAMPLES.md section and number, location, codes any of which must be reported there)
REAL = [
    (
        "1.1",
        "anomalib-2.7.0/src/anomalib/models/image/efficient_ad/lightning_model.py:429",
        HOST_SYNC,
    ),
    ("1.2", "anomalib-2.7.0/src/anomalib/models/image/cflow/lightning_model.py:214", HOST_SYNC),
    ("1.3", "anomalib-2.7.0/src/anomalib/models/image/ganomaly/lightning_model.py:241", HOST_SYNC),
    (
        "1.4",
        "anomalib-2.7.0/src/anomalib/models/image/mh_patchcore/lightning_model.py:153",
        HOST_SYNC,
    ),
    ("1.5", "torchgeo-0.8.1/torchgeo/trainers/moco.py:428", HOST_SYNC),
    ("1.6", "torchgeo-0.8.1/torchgeo/trainers/simclr.py:267", HOST_SYNC),
    ("1.7", "neuralforecast-3.3.0/neuralforecast/common/_base_model.py:2448", HOST_SYNC),
    ("1.8", "neuralforecast-3.3.0/neuralforecast/common/_base_model.py:2559", HOST_SYNC),
    ("1.9", "nemo-toolkit-3.0.0/nemo/collections/tts/models/ssl_tts.py:329", HOST_SYNC),
    ("1.10", "nemo-toolkit-3.0.0/nemo/collections/tts/models/ssl_tts.py:332", HOST_SYNC),
    ("1.11", "nemo-toolkit-3.0.0/nemo/collections/tts/models/magpietts.py:2464", HOST_SYNC),
    (
        "1.12",
        "nemo-toolkit-3.0.0/nemo/collections/speechlm2/models/duplex_ear_tts.py:295",
        HOST_SYNC,
    ),
    ("1.13", "nemo-toolkit-3.0.0/nemo/collections/tts/models/easy_magpietts.py:611", HOST_SYNC),
    ("1.14", "nemo-toolkit-3.0.0/nemo/collections/tts/models/magpietts.py:2706", HOST_SYNC),
    (
        "1.15",
        "nemo-toolkit-3.0.0/nemo/collections/asr/models/classification_models.py:1346",
        HOST_SYNC,
    ),
    ("1.16", "lightning-bolts-0.7.0/src/pl_bolts/models/rl/per_dqn_model.py:116", HOST_SYNC),
    (
        "1.17",
        "pytorch-forecasting-1.8.0/pytorch_forecasting/models/base/_base_model.py:863",
        HOST_SYNC,
    ),
    ("1.18", "lightly-1.6.0/lightly/utils/benchmarking/benchmark_module.py:148", HOST_SYNC),
    ("1.19", "terratorch-1.2.13/terratorch/tasks/embedding_decoding_task.py:78", HOST_SYNC),
    ("1.20", "neuralforecast-3.3.0/neuralforecast/models/timellm.py:428", HOST_SYNC),
    ("2.1", "anomalib-2.7.0/src/anomalib/models/image/anomaly_dino/torch_model.py:332", SHAPES),
    ("2.2", "anomalib-2.7.0/src/anomalib/models/image/anomaly_dino/torch_model.py:293", SHAPES),
    ("2.3", "anomalib-2.7.0/src/anomalib/models/image/glass/torch_model.py:466", SHAPES),
    ("2.4", "anomalib-2.7.0/src/anomalib/models/image/efficient_ad/torch_model.py:638", SHAPES),
    ("2.5", "anomalib-2.7.0/src/anomalib/models/image/supersimplenet/loss.py:35", SHAPES),
    ("2.6", "lightly-1.6.0/lightly/loss/ntx_ent_loss.py:174", SHAPES),
    ("2.7", "lightly-1.6.0/lightly/loss/macl_loss.py:91", SHAPES),
    ("2.8", "lightly-1.6.0/lightly/loss/regularizer/dse.py:152", SHAPES),
    ("2.9", "lightning-bolts-0.7.0/src/pl_bolts/models/detection/yolo/yolo_module.py:375", SHAPES),
    ("2.10", "nemo-toolkit-3.0.0/nemo/collections/common/losses/cross_entropy.py:72", SHAPES),
    (
        "2.11",
        "nemo-toolkit-3.0.0/nemo/collections/asr/losses/ssl_losses/contrastive.py:196",
        SHAPES,
    ),
    (
        "2.12",
        "nemo-toolkit-3.0.0/nemo/collections/asr/models/classification_models.py:1400",
        SHAPES,
    ),
    ("2.13", "nemo-toolkit-3.0.0/nemo/collections/speechlm2/models/salm.py:290", SHAPES),
    ("2.14", "nemo-toolkit-3.0.0/nemo/collections/speechlm2/models/duplex_ear_tts.py:403", SHAPES),
    ("2.15", "nemo-toolkit-3.0.0/nemo/collections/tts/modules/moe_modules.py:332", SHAPES),
    ("2.16", "neuralforecast-3.3.0/neuralforecast/common/_base_model.py:1351", SHAPES),
    (
        "2.17",
        "pytorch-forecasting-1.8.0/pytorch_forecasting/metrics/base_metrics/_base_metrics.py:218",
        SHAPES,
    ),
    (
        "2.18",
        "pyannote-audio-4.0.7/src/pyannote/audio/tasks/segmentation/multilabel.py:342",
        SHAPES,
    ),
    (
        "2.19",
        "pyannote-audio-4.0.7/src/pyannote/audio/tasks/segmentation/speaker_diarization.py:428",
        SHAPES,
    ),
    ("2.20", "terratorch-1.2.13/terratorch/tasks/object_detection_task.py:221", SHAPES),
    ("3.1", "terratorch-1.2.13/terratorch/datamodules/era5.py:187", ("TPU301",)),
    ("3.2", "terratorch-1.2.13/terratorch/datamodules/era5.py:198", ("TPU301",)),
    ("4.3", "aitextgen-0.6.0/aitextgen/train.py:41", ("TPU303",)),
    ("4.4", "anomalib-2.7.0/src/anomalib/data/datamodules/base/image.py:373", ("TPU303",)),
    (
        "4.5",
        "pytorch-forecasting-1.8.0/pytorch_forecasting/data/data_module/_encoder_decoder_data_module.py:688",
        ("TPU303",),
    ),
    (
        "4.6",
        "pytorch-forecasting-1.8.0/pytorch_forecasting/data/data_module/_tslib_data_module.py:771",
        ("TPU303",),
    ),
    ("4.9", "terratorch-1.2.13/terratorch/datamodules/era5.py:182", ("TPU303",)),
    ("4.10", "terratorch-1.2.13/terratorch/datamodules/random.py:85", ("TPU303",)),
    ("4.11", "terratorch-1.2.13/terratorch/datamodules/sen4map.py:214", ("TPU303",)),
    ("4.12", "terratorch-1.2.13/terratorch/tasks/wxc_task.py:41", ("TPU303",)),
    ("4.14", "terratorch-1.2.13/terratorch/datamodules/dummy_datamodule.py:162", ("TPU303",)),
    # 6.5 (the `tpu_cores` parameter at aitextgen.py:558) and 6.10/6.11 (the `tpu_cores` config
    # fields of openspeech's configurations.py) feed the findings at 6.6 and 6.7-6.9: one
    # problem, one finding, with them as related places (issue 21 item 7).
    ("6.6", "aitextgen-0.6.0/aitextgen/aitextgen.py:739", ("TPU001",)),
    ("6.7", "openspeech-core-0.4.0/openspeech/utils.py:255", ("TPU001",)),
    ("6.8", "openspeech-core-0.4.0/openspeech/utils.py:284", ("TPU001",)),
    ("6.9", "openspeech-core-0.4.0/openspeech/utils.py:341", ("TPU001",)),
    (
        "7.1",
        "lightning-bolts-0.7.0/src/pl_bolts/models/self_supervised/moco/moco2_module.py:180",
        ("TPU006",),
    ),
    ("7.3", "nemo-toolkit-3.0.0/nemo/collections/asr/losses/rnnt_pytorch.py:185", ("TPU006",)),
    ("7.4", "nemo-toolkit-3.0.0/nemo/collections/asr/losses/rnnt_pytorch.py:230", ("TPU006",)),
    (
        "7.5",
        "nemo-toolkit-3.0.0/nemo/collections/common/losses/multi_similarity_loss.py:91",
        ("TPU006",),
    ),
    ("7.7", "nemo-toolkit-3.0.0/nemo/collections/tts/models/fastpitch.py:886", ("TPU006",)),
]

# (trap, location, codes that must not be reported there)
TRAPS = [
    ("T1", "scvi-tools-1.4.2/src/scvi/train/_trainingplans.py:2173", HOST_SYNC),
    ("T2", "nemo-toolkit-3.0.0/nemo/collections/tts/models/magpietts.py:2135", HOST_SYNC),
    ("T3", "terratorch-1.2.13/tests/test_scheduling_ddpm.py:421", HOST_SYNC),
    ("T4", "neuralforecast-3.3.0/neuralforecast/models/informer.py:160", HOST_SYNC),
    ("T5", "lightly-1.6.0/lightly/utils/benchmarking/benchmark_module.py:158", HOST_SYNC),
    (
        "T6",
        "lightning-2.6.6/src/lightning/pytorch/trainer/connectors/data_connector.py:243",
        ("TPU301",),
    ),
    (
        "T7",
        "pytorch-lightning-1.6.5/pytorch_lightning/trainer/connectors/accelerator_connector.py:194",
        ("TPU001",),
    ),
    (
        "T8",
        "lightning-bolts-0.7.0/src/pl_bolts/models/self_supervised/swav/swav_resnet.py:316",
        SHAPES,
    ),
    ("T9", "pyannote-audio-4.0.7/src/pyannote/audio/tasks/segmentation/mixins.py:380", HOST_SYNC),
    ("T9b", "nemo-toolkit-3.0.0/nemo/collections/tts/models/fastpitch.py:456", HOST_SYNC),
    (
        "T10",
        "lightning-bolts-0.7.0/src/pl_bolts/models/autoencoders/basic_vae/basic_vae_module.py:151",
        HOST_SYNC,
    ),
    ("more", "pytorch-tabular-1.2.0/src/pytorch_tabular/tabular_datamodule.py:815", ("TPU303",)),
    # Listed as real in EXAMPLES.md (3.3), but the module documents use_distributed_sampler=False:
    # its own DistributedSampler is required there, and removing it would break sharding.
    ("3.3", "nemo-toolkit-3.0.0/nemo/collections/tts/models/easy_magpietts.py:1517", ("TPU301",)),
    # Listed as real in EXAMPLES.md (4.13), but the loader has a custom batch_sampler, which
    # owns drop_last: DataLoader(drop_last=True) would be an error there.
    (
        "4.13",
        "terratorch-1.2.13/terratorch/models/backbones/clay_v15/datamodule.py:280",
        ("TPU303",),
    ),
    ("more", "nemo-toolkit-3.0.0/nemo/collections/asr/models/ctc_models.py:621", ("TPU103",)),
    # EXAMPLES.md sections 4.7-4.8 and 5 were judged before issue 21: the batch sizes there
    # feed images into convolutions or ViTs (torchgeo, terratorch, flash, swav), tokens into
    # transformers and LSTMs (lightning's demos package, BoringModel included, is judged as
    # one project; aitextgen) or audio into separation networks
    # (asteroid): the rows of the matmuls are batch x pixels or batch x tokens, and a small
    # per-core batch pads nothing. TPU302 grades only a batch that is the row dimension.
    ("4.7", "lightning-2.6.6/src/lightning/pytorch/demos/boring_classes.py:145", ("TPU302",)),
    ("4.8", "lightning-2.6.6/src/lightning/pytorch/demos/transformer.py:214", ("TPU302",)),
    ("5.4", "aitextgen-0.6.0/aitextgen/aitextgen.py:571", ("TPU302",)),
    ("5.5", "lightning-2.6.6/src/lightning/pytorch/demos/lstm.py:96", ("TPU302",)),
    ("5.6", "torchgeo-0.8.1/torchgeo/datamodules/geo.py:38", ("TPU302",)),
    ("5.7", "torchgeo-0.8.1/torchgeo/datamodules/geo.py:177", ("TPU302",)),
    ("5.8", "torchgeo-0.8.1/torchgeo/datamodules/geo.py:374", ("TPU302",)),
    ("5.9", "torchgeo-0.8.1/torchgeo/datamodules/l7irish.py:26", ("TPU302",)),
    ("5.10", "terratorch-1.2.13/terratorch/datamodules/sen1floods11.py:55", ("TPU302",)),
    ("5.11", "terratorch-1.2.13/terratorch/datamodules/fire_scars.py:43", ("TPU302",)),
    ("5.12", "terratorch-1.2.13/terratorch/datamodules/burn_intensity.py:35", ("TPU302",)),
    ("5.13", "terratorch-1.2.13/terratorch/datamodules/biomassters.py:72", ("TPU302",)),
    (
        "5.14",
        "terratorch-1.2.13/terratorch/datamodules/multi_temporal_crop_classification.py:38",
        ("TPU302",),
    ),
    (
        "5.15",
        "terratorch-1.2.13/terratorch/models/backbones/clay_v15/datamodule.py:216",
        ("TPU302",),
    ),
    ("5.16", "terratorch-1.2.13/terratorch/models/backbones/clay_v15/callbacks.py:8", ("TPU302",)),
    ("5.17", "asteroid-0.7.0/asteroid/data/wsj0_mix.py:15", ("TPU302",)),
    ("5.18", "lightning-flash-0.8.2/src/flash/image/classification/cli.py:24", ("TPU302",)),
    (
        "5.19",
        "lightning-flash-0.8.2/src/flash/image/classification/integrations/baal/data.py:79",
        ("TPU302",),
    ),
    (
        "5.20",
        "lightning-bolts-0.7.0/src/pl_bolts/models/self_supervised/swav/swav_module.py:404",
        ("TPU302",),
    ),
]
TRAP_FILES = [
    # Framework plumbing: device_parser's 23 `tpu_cores` are parameters and parsing code.
    ("T7", "pytorch-lightning-1.6.5/pytorch_lightning/utilities/device_parser.py", ("TPU001",)),
    # Lightning's own device mixin overrides `cuda()`.
    ("more", "lightning-2.6.6/src/lightning/fabric/utilities/device_dtype_mixin.py", ("TPU006",)),
]


@pytest.fixture(scope="session")
def corpus_findings(corpus_dir: Path) -> dict[str, list[tuple[int, int, str]]]:
    # Preview rules too: the traps of preview rules must stay silent in preview mode.
    config = Config.from_mapping({"select": ["TPU"], "preview": True}, root=corpus_dir)
    run = check_paths([str(corpus_dir / "pkgs")], config, use_cache=False)
    by_file: dict[str, list[tuple[int, int, str]]] = {}
    prefix = str(corpus_dir / "pkgs") + "/"
    for d in run.diagnostics:
        path = str((Path.cwd() / d.path).resolve()) if not Path(d.path).is_absolute() else d.path
        key = path.split(prefix, 1)[-1]
        by_file.setdefault(key, []).append((d.start.line, d.end.line, d.code))
    assert not run.internal_errors, run.internal_errors
    return by_file


def _at(findings: dict, location: str, slack: int = 0) -> set[str]:
    """Codes of findings whose span covers the location's line. With `slack`, also findings
    starting up to `slack` lines below it: EXAMPLES.md sometimes gives the line where a
    multi-line call starts (`pl.Trainer(`) while the finding is on its argument."""
    path, line = location.rsplit(":", 1)
    number = int(line)
    return {
        code
        for start, end, code in findings.get(path, [])
        if start <= number <= end or number <= start <= number + slack
    }


@pytest.mark.parametrize("ref, location, codes", REAL, ids=[r[0] for r in REAL])
def test_real_example_is_reported(
    corpus_findings, ref: str, location: str, codes: tuple[str, ...]
) -> None:
    found = _at(corpus_findings, location, slack=3)
    assert found & set(codes), (
        f"EXAMPLES.md {ref} {location}: expected one of {codes}, got {sorted(found)}"
    )


@pytest.mark.parametrize(
    "ref, location, codes", TRAPS, ids=[f"{t[0]}-{t[1].rsplit('/', 1)[-1]}" for t in TRAPS]
)
def test_trap_is_silent(corpus_findings, ref: str, location: str, codes: tuple[str, ...]) -> None:
    found = _at(corpus_findings, location)
    assert not found & set(codes), (
        f"EXAMPLES.md trap {ref} {location}: reported {sorted(found & set(codes))}"
    )


@pytest.mark.parametrize(
    "ref, path, codes", TRAP_FILES, ids=[t[1].rsplit("/", 1)[-1] for t in TRAP_FILES]
)
def test_trap_file_is_silent(corpus_findings, ref: str, path: str, codes: tuple[str, ...]) -> None:
    found = {code for _, _, code in corpus_findings.get(path, [])}
    assert not found & set(codes), f"{path}: reported {sorted(found & set(codes))}"
