#!/bin/bash
export PJRT_DEVICE=TPU
python train.py --epochs 3
