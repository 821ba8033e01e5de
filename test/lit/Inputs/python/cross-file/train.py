from models import build_model
from steps import contrastive_step

model = build_model()
for view1, view2 in loader:
    contrastive_step(model, view1, view2, criterion)
