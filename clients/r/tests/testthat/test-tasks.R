# Bipartite networks and label sets through the R client, against a live server at
# OKBOOST_URL (tests/e2e/test_clients.py starts one).

url <- Sys.getenv("OKBOOST_URL")
small <- list(n_estimators = 15, learning_rate = 0.2, max_splits = 3, random_state = 0)

# two families: drugs d1-d4 near (0, 1) bind targets t1-t2, drugs d5-d8 near (1, 0) bind t3-t4
drugs <- data.frame(
  id = paste0("d", 1:8),
  x = c(0, 0.1, 0.2, 0, 1, 0.9, 1, 0.8), y = c(1, 0.9, 1, 0.8, 0, 0.1, 0.2, 0)
)
targets <- matrix(c(0, 1, 0.1, 1, 1, 0, 1, 0.1), ncol = 2, byrow = TRUE)
pairs <- rbind(cbind(rep(1:4, each = 2), rep(1:2, 4)), cbind(rep(5:8, each = 2), rep(3:4, 4)))

test_that("bipartite: train, ranked edges of new drugs, scores per block", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  for (binary in c(TRUE, FALSE)) {
    cl <- okboost_client(url, binary = binary)
    fit <- ok_train_bipartite(cl, drugs, list(inputs = targets, ids = paste0("t", 1:4)),
      edges = pairs, model = "okboost", params = small, cv = list(folds = c(2, 2)), wait = TRUE
    )
    expect_equal(fit$model$task, "bipartite")
    expect_equal(length(fit$model$bipartite$cv$configurations$row_fold), 4)
    given <- ok_train_bipartite(cl, drugs, targets, edges = pairs, model = "okboost",
      params = small, cv = list(folds = 2, row_folds = rep(0:1, 4), random_state = 1),
      wait = TRUE
    ) # every field of cv reaches the service, row_folds too
    expect_true(given$model$bipartite$cv$given_folds$rows)
    expect_equal(given$model$bipartite$cv$random_state, 1)
    ok_delete_model(cl, given$model_id)
    new <- data.frame(id = c("new-a", "new-b"), x = c(0.05, 0.95), y = c(0.95, 0.05))
    out <- ok_kernel_bipartite(cl, fit$model_id, rows = new, top_k = 2)
    expect_equal(dim(out$scores$new_rows), c(2, 4))
    a <- out$edges$new_rows_ids
    expect_setequal(a$col[a$row == "new-a"], c("t1", "t2"))
    expect_setequal(a$col[a$row == "new-b"], c("t3", "t4"))
    e <- out$edges$new_rows
    expect_true(all(e$row %in% 1:2) && all(e$col %in% 1:4))
    by_row <- ok_evaluate_bipartite(cl, fit$model_id, rows = new,
      new_rows = cbind(c(1, 1, 2, 2), c(1, 2, 3, 4))
    )
    by_id <- ok_evaluate_bipartite(cl, fit$model_id, rows = new,
      by_id = cbind(c("new-a", "new-a", "new-b", "new-b"), c("t1", "t2", "t3", "t4"))
    )
    expect_equal(by_row$new_rows$auroc, 1)
    expect_equal(by_id$new_rows, by_row$new_rows)
    expect_null(by_id$new_cols)
  }
})

test_that("bipartite: unknown pairs at training and left out of the scores", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  fit <- ok_train_bipartite(cl, drugs, list(inputs = targets, ids = paste0("t", 1:4)),
    edges = pairs, unknown_pairs = cbind(c(1, 2), c(3, 4)), model = "okboost", params = small,
    wait = TRUE
  )
  expect_equal(fit$model$bipartite$n_unknown, 2)
  adjacency <- matrix(0, 8, 4)
  adjacency[pairs] <- 1
  adjacency[1, 3] <- NA # an unknown pair, as in unknown_pairs
  by_matrix <- ok_train_bipartite(cl, drugs, targets, adjacency = adjacency,
    model = "okboost", params = small, wait = TRUE
  )
  expect_equal(by_matrix$model$bipartite$n_unknown, 1)
  ok_delete_model(cl, by_matrix$model_id)
  new <- data.frame(id = c("new-a", "new-b"), x = c(0.05, 0.95), y = c(0.95, 0.05))
  out <- ok_evaluate_bipartite(cl, fit$model_id, rows = new,
    new_rows = cbind(c(1, 1, 2, 2), c(1, 2, 3, 4)),
    unknown_pairs = list(new_rows = cbind(1, 3), by_id = cbind("new-b", "t1"))
  )
  expect_equal(out$new_rows$n_unknown, 2)
  expect_equal(out$new_rows$n_pairs, 6)
})

test_that("bipartite: a labelled adjacency and similarity in another order are matched by id", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  drug_ids <- paste0("d", 1:8)
  target_ids <- paste0("t", 1:4)
  adjacency <- matrix(0, 8, 4, dimnames = list(drug_ids, target_ids))
  adjacency[pairs] <- 1
  sim <- function(a, b) { # exp(-squared distance) between the rows of a and b, unnamed
    d <- unname(as.matrix(dist(rbind(a, b))))
    exp(-d[seq_len(nrow(a)), nrow(a) + seq_len(nrow(b)), drop = FALSE]^2)
  }
  S <- sim(targets, targets)
  dimnames(S) <- list(target_ids, target_ids)
  shuffle_d <- c(6, 3, 8, 1, 4, 7, 2, 5)
  shuffle_t <- c(3, 1, 4, 2)
  train <- function(cols, adjacency) {
    ok_train_bipartite(cl, drugs, cols, adjacency = adjacency, model = "okboost",
                       params = small, wait = TRUE)
  }
  ordered <- train(list(similarity = unname(S), ids = target_ids), unname(adjacency))
  new_rows <- data.frame(id = c("new-a", "new-b"), x = c(0.05, 0.95), y = c(0.95, 0.05))
  T <- sim(rbind(c(0.05, 1), c(1, 0.05)), targets)
  want <- ok_kernel_bipartite(cl, ordered$model_id, rows = new_rows,
                              cols = list(similarity = T, ids = c("n1", "n2")))$scores
  dimnames(T) <- list(c("n1", "n2"), target_ids)
  # a matrix and a data.frame (text row names) labelled by id, rows and columns shuffled
  for (labelled in list(adjacency[shuffle_d, shuffle_t],
                        as.data.frame(adjacency[shuffle_d, shuffle_t]))) {
    fit <- train(list(similarity = S[, shuffle_t]), labelled)
    expect_true(fit$model$bipartite$has_col_ids)
    got <- ok_kernel_bipartite(cl, fit$model_id, rows = new_rows,
                               cols = list(similarity = T[, shuffle_t]))$scores
    expect_equal(got, want)
  }
  # a data.frame's own row numbers (1, 2, ...) are positions, not ids; its columns are named
  by_position <- train(list(similarity = S),
                       as.data.frame(adjacency[, shuffle_t], row.names = NULL))
  expect_equal(ok_kernel_bipartite(cl, by_position$model_id, rows = new_rows,
                                   cols = list(similarity = T))$scores, want)
  # ids that are not the sides' vertices: the service's 422 names the field and an id
  renamed <- adjacency[shuffle_d, ]
  rownames(renamed)[rownames(renamed) == "d4"] <- "d99"
  err <- tryCatch(train(list(similarity = S), renamed), okboost_error = function(e) e)
  expect_s3_class(err, "okboost_error")
  expect_equal(err$status, 422)
  expect_match(conditionMessage(err), "adjacency_row_ids")
  expect_match(conditionMessage(err), "d99")
  expect_error(train(list(similarity = S[, c(1, 2, 3, 3)]), adjacency), "same items once each")
  expect_error(train(list(similarity = S, ids = target_ids), adjacency), "not both")
})

test_that("multi-label: thresholds by CV, label sets by name, measures", {
  skip_if(url == "", "OKBOOST_URL is not set: start a server (okboost serve) and point to it")
  cl <- okboost_client(url)
  i <- 0:23
  X <- cbind(sin(i), cos(i * 0.7))
  Y <- data.frame(a = as.integer(X[, 1] > 0), b = as.integer(X[, 2] > 0),
                  c = as.integer(X[, 1] + X[, 2] > 0.5))
  fit <- ok_train_multilabel(cl, X[1:18, ], Y[1:18, ], model = "okboost", params = small,
                             per_label = TRUE, wait = TRUE)
  expect_equal(fit$model$multilabel$label_names, c("a", "b", "c"))
  out <- ok_predict_labels(cl, fit$model_id, X[19:24, ])
  expect_equal(dim(out$probabilities), c(6, 3))
  expect_true(all(out$probabilities >= 0 & out$probabilities <= 1))
  expect_equal(out$label_sets[[1]], c("a", "b", "c")[out$labels[1, ] == 1])
  # rows with as many labels each (jsonlite would make them a matrix): still one set per row
  for (rows in list(c(19, 19), 19, 19:24)) {
    same <- ok_predict_labels(cl, fit$model_id, X[rows, , drop = FALSE])
    expect_type(same$label_sets, "list")
    expect_length(same$label_sets, length(rows))
    for (r in seq_along(rows)) {
      expect_equal(same$label_sets[[r]], c("a", "b", "c")[same$labels[r, ] == 1])
    }
  }
  scores <- ok_evaluate_labels(cl, fit$model_id, X[19:24, ], Y[19:24, ])
  expect_true(scores$hamming_loss >= 0 && scores$hamming_loss <= 1)
  # a data frame's columns, named in another order, are matched to the model's labels
  truth <- setNames(as.data.frame(Y[19:24, c(3, 1, 2)]), c("c", "a", "b"))
  expect_equal(ok_evaluate_labels(cl, fit$model_id, X[19:24, ], truth), scores)
  # a matrix's column names too
  expect_equal(ok_evaluate_labels(cl, fit$model_id, X[19:24, ], as.matrix(truth)), scores)
  # logical label columns (TRUE / FALSE) are label rows, as 1 / 0: not an id column
  logical <- ok_train_multilabel(cl, X[1:18, ], as.data.frame(Y[1:18, ] == 1),
                                 model = "okboost", params = small, per_label = TRUE,
                                 wait = TRUE)
  expect_equal(logical$model$multilabel$label_names, c("a", "b", "c"))
  expect_equal(logical$model$multilabel$thresholds, fit$model$multilabel$thresholds)
  same <- ok_evaluate_labels(cl, logical$model_id, X[19:24, ], as.data.frame(truth == 1))
  expect_equal(same[names(same) != "model_id"], scores[names(scores) != "model_id"])
  expect_true(is.numeric(scores$label_ranking_average_precision))
})
