python3 predict.py /workspace/inputs /workspace/outputs
