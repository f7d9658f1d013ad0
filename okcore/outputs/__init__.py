"""The output side: output kernels, the output feature space (factor Phi of the Gram
matrix), graphs and their diffusion kernels, and pre-images (paper sections 2.1, 3)."""
