#!/bin/bash
python train_rank.py --tpu_cores 8 --max_epochs 10
