# FLARE's entry point: read every case under inputs/, write its label map under outputs/.
python3 predict.py -i /workspace/inputs -o /workspace/outputs
