def contrastive_step(model, view1, view2, criterion):
    out1 = model(view1)
    out2 = model(view2)
    criterion(out1, out2).backward()
