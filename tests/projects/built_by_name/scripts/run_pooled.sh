#!/bin/sh
python train.py head=pooled
